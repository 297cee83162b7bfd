# examples/: wavefront batch programs a GPU developer copies from. Each
# example is one GPU source that hipcc and nvcc both compile (*_gpu.cu:
# compile-only here, `make hip`, `make cuda`, `make examples` where the
# compiler exists) and a cpu-engine program that runs against a target
# (`make examples`; tests/examples/run.sh runs them). Kernel bodies:
# examples/kv_kernels.h, shared by every build; first_retrieve is
# self-contained (its kernel in its own source, no ex_* header).
# sync_roundtrip (below) is the synchronous API alone, host code.
EXAMPLES := first_retrieve batch_store_retrieve multi_queue cache_lookup prefix_cache
EXAMPLES_CPU := $(addprefix $(B)/examples/,$(addsuffix _cpu,$(EXAMPLES)))
EXAMPLES_GPU_SRCS := $(addprefix examples/,$(addsuffix _gpu.cu,$(EXAMPLES)))
HIP_SRCS += $(EXAMPLES_GPU_SRCS)
CUDA_SRCS += $(EXAMPLES_GPU_SRCS)

$(B)/examples/%_cpu: examples/%_cpu.c examples/ex_host.h examples/kv_kernels.h $(LIBNKV)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIBNKV) $(LDFLAGS) $(LIBNKV_LDLIBS) $(EX_LDLIBS) -o $@
# prefix_cache: its own headers, and block keys from libxxhash / libcrypto.
$(B)/examples/prefix_cache_cpu: examples/pc_host.h examples/pc_keys.h examples/prefix_kernels.h \
	include/nkv_kvcache.h
$(B)/examples/prefix_cache_cpu: EX_LDLIBS := -lxxhash -lcrypto

# sync_roundtrip: the synchronous API alone, host code (no wave, no GPU
# twin), from nkv_host.h and nkv_list.h only.
$(B)/examples/sync_roundtrip: examples/sync_roundtrip.c $(LIBNKV)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIBNKV) $(LDFLAGS) $(LIBNKV_LDLIBS) -o $@

# exec_slice: Exec from the synchronous API, its Lua modules in
# examples/exec/ (docs/exec.md).
$(B)/examples/exec_slice: examples/exec_slice.c $(LIBNKV)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIBNKV) $(LDFLAGS) $(LIBNKV_LDLIBS) -o $@

.PHONY: examples examples-cpu examples-hip
examples-cpu: $(EXAMPLES_CPU) $(B)/examples/sync_roundtrip $(B)/examples/exec_slice
examples-hip: $(patsubst %,build/hip/%.o,$(EXAMPLES_GPU_SRCS))
examples: examples-cpu $(if $(shell command -v $(HIPCC) 2>/dev/null),examples-hip)
