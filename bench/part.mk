# nkv-bench (bench/): the main job's benchmark, with an embedded nkv-target,
# its kernel body compiled for every engine, and the benchmark helpers.
PROGRAMS += nkv-bench
nkv-bench_SRCS := bench/main.c bench/opts.c bench/target.c bench/run.c bench/report.c
nkv-bench_LIBS = $(LIBNKV) $(LIBNKVTGT)
nkv-bench_LDLIBS = $(LIBNKV_LDLIBS) $(TARGET_LDLIBS) -lm
HIP_SRCS += src/device/bench_kernels_hip.cpp
CUDA_SRCS += src/device/bench_kernels_cuda.cu

# bench/pingpong: the reference points bench/run-bench.sh compares with
# (a cross-thread cache-line round trip, the single-core memcpy rate).
# Not installed: a measuring aid, not a tool.
$(B)/bench/pingpong: bench/pingpong.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ $(LDFLAGS)
.PHONY: bench-tools
bench-tools: $(B)/bench/pingpong
