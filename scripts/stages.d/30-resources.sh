# Device kernels keep their state in registers: no stack frame (nvcc
# --resource-usage) and no scratch (hipcc --save-temps) for any kernel, on
# every arch the Makefile builds for (issue 12: the SQE used to live in
# local memory). One "NKV-RES <compiler> <arch> <kernel>" line per kernel;
# a compiler that is absent is one SKIP line naming it.
stage resources run_counted NKV-RES python3 tests/device/check_resources.py \
	--nvcc "$(make -s print-nvcc)" --cuda-archs "$(make -s print-cuda-archs)" \
	--hip-archs "$(make -s print-hip-archs)"
