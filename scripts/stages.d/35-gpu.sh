# nkv with a GPU runtime: libnkv and nkv-bench built against CUDA (make
# GPU=cuda) and HIP (make GPU=hip) where the toolkit exists: compiled and
# linked only, CI has no GPU. Then tests/gpu/run.sh, whose cases need a
# GPU and are reported skipped by name, with the reason, without one.
if [ -e "$(make -s print-cuda-home)/include/cuda_runtime_api.h" ]; then
	stage gpu-cuda-build quiet gpu-cuda-build make GPU=cuda lib programs gpu-tests
else
	skip gpu-cuda-build "no CUDA toolkit (cuda_runtime_api.h) on this machine"
fi
if command -v hipcc >/dev/null && [ -e /usr/include/hip/hip_runtime_api.h ]; then
	stage gpu-hip-build quiet gpu-hip-build make GPU=hip lib programs gpu-tests
else
	skip gpu-hip-build "hipcc / libamdhip64-dev not installed"
fi
stage gpu run_counted NKV-GPU tests/gpu/run.sh build/gpu-cuda
