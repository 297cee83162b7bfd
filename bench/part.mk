# nkv-bench (bench/): the main job's benchmark, with an embedded nkv-target,
# its kernel body compiled for every engine, and the benchmark helpers.
PROGRAMS += nkv-bench
nkv-bench_SRCS := bench/main.c bench/opts.c bench/target.c bench/run.c bench/report.c \
	bench/prefix.c bench/exec.c
nkv-bench_LIBS = $(LIBNKV) $(LIBNKVTGT)
# libcrypto: --key-order sha256's SHA-256 (nkv-bench only; libssl-dev);
# libxxhash: --workload prefix's block keys. prefix.c runs the
# prefix_cache example's kernel body and keys (examples/prefix_kernels.h,
# examples/pc_keys.h).
nkv-bench_LDLIBS = $(LIBNKV_LDLIBS) $(TARGET_LDLIBS) -lm -lcrypto -lxxhash
$(B)/obj/bench/prefix.o: CPPFLAGS += -Iexamples
# The GPU engine: the bench kernel's launcher, through the GPU's compiler
# (make GPU=cuda | GPU=hip); without one, a stub that says so. `make
# cuda` / `make hip` compile the launchers too (compile proofs).
HIP_SRCS += bench/gpu_hip.cpp
CUDA_SRCS += bench/gpu_cuda.cu
BENCH_GPU_DEPS := bench/gpu.h bench/gpu_launch.h $(wildcard include/*.h src/device/*.h)
ifeq ($(GPU),cuda)
nkv-bench_LIBS += $(B)/obj/bench/gpu_cuda.o
nkv-bench_LDLIBS += -lstdc++
$(B)/obj/bench/gpu_cuda.o: bench/gpu_cuda.cu $(BENCH_GPU_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(CUDA_FLAGS) -Xcompiler -fPIC -x cu -c $< -o $@
else ifeq ($(GPU),hip)
nkv-bench_LIBS += $(B)/obj/bench/gpu_hip.o
nkv-bench_LDLIBS += -lstdc++
$(B)/obj/bench/gpu_hip.o: bench/gpu_hip.cpp $(BENCH_GPU_DEPS)
	@mkdir -p $(@D)
	$(HIPCC) $(HIP_FLAGS) -fPIC -x hip -c $< -o $@
else
nkv-bench_SRCS += bench/gpu_none.c
endif

# bench/pingpong: the reference points bench/run-bench.py and
# bench/compare.py compare with (a cross-thread cache-line round trip,
# the single-core memcpy rate; each thread optionally pinned).
# Not installed: a measuring aid, not a tool.
$(B)/bench/pingpong: bench/pingpong.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ $(LDFLAGS)
.PHONY: bench-tools
bench-tools: $(B)/bench/pingpong $(if $(GPU),$(B)/bench/pingpong-gpu)
# The GPU<->CPU round trip through pinned host memory (make GPU=... bench-tools).
CUDA_SRCS += bench/pingpong_gpu.cu
HIP_SRCS += bench/pingpong_gpu.cu
$(B)/bench/pingpong-gpu: bench/pingpong_gpu.cu
	@mkdir -p $(@D)
	$(if $(filter cuda,$(GPU)),$(NVCC) $(CUDA_FLAGS) -x cu,$(HIPCC) $(HIP_FLAGS) -x hip) $< -o $@

# make bench-compare: nkv beside its references in one run (bench/compare.py:
# the cpu engine against ping-pong and memcpy, the rados backend against
# rados_loop on a throwaway cluster, the rocksdb backend against
# bench/rocksdb/rocks_loop and the mem backend). Writes bench/results/compare.*.
# COMPARE_FLAGS passes more, e.g. COMPARE_FLAGS="--runs 5".
.PHONY: bench-compare
bench-compare: $(B)/bin/nkv-bench $(B)/bin/nkv-target $(B)/bench/pingpong $(B)/bench/rados_loop $(B)/bench/rocks_loop
	python3 bench/compare.py --build $(B) $(COMPARE_FLAGS)

# bench/tcp/tcp_bench: nkv-target over NVMe/TCP on loopback beside a plain
# TCP stream of the same bytes, in one run (docs/bench.md, "NVMe/TCP").
# The host side is the test host (tests/lib/tcp_host.c) until issue 45's
# initiator. Not installed: a measuring aid.
$(B)/bench/tcp_bench: bench/tcp/tcp_bench.c tests/lib/tcp_host.c src/nvme-tcp/pdu.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/lib $(CFLAGS) $^ -o $@ $(LDFLAGS) -lisal
bench-tools: $(B)/bench/tcp_bench

# bench/exec/exec_bench: Exec's TP slice beside a whole Retrieve, over
# NVMe/TCP and vfio-user, and an endless module beside another client, in
# one run (docs/bench.md, "Exec"). Not installed: a measuring aid.
$(B)/bench/exec_bench: bench/exec/exec_bench.c tests/lib/tgt_proc.c $(LIBNKV) $(LIBNKVTGT) | $(B)/bin/nkv-target
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/lib $(CFLAGS) bench/exec/exec_bench.c tests/lib/tgt_proc.c \
		$(LIBNKV) $(LIBNKVTGT) -o $@ $(LDFLAGS) $(LIBNKV_LDLIBS) $(TARGET_LDLIBS)
bench-tools: $(B)/bench/exec_bench

# bench/nvmf/nvmf_loop: an NVMe/TCP host straight to a remote controller
# with nkv's initiator (no front): the reference bench/front.py sets
# beside nkv-bench --target tcp: (the library's front), issue 45's goals.
# Not installed: a measuring aid.
$(B)/bench/nvmf_loop: bench/nvmf/nvmf_loop.c bench/loop_util.h $(LIBNKVTGT)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ibench $(CFLAGS) $< $(LIBNKVTGT) -o $@ $(LDFLAGS) $(TARGET_LDLIBS)
bench-tools: $(B)/bench/nvmf_loop
