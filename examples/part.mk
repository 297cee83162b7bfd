# examples/: wavefront batch programs a HIP developer copies from. Each
# example is a HIP source (compile-only here: `make hip`, `make examples`
# when hipcc exists) and a cpu-engine program that runs against a target
# (`make examples`; tests/examples/run.sh runs them). Kernel bodies:
# examples/kv_kernels.h, shared by all three builds.
EXAMPLES := batch_store_retrieve multi_queue cache_lookup
EXAMPLES_CPU := $(addprefix $(B)/examples/,$(addsuffix _cpu,$(EXAMPLES)))
EXAMPLES_HIP_SRCS := $(addprefix examples/,$(addsuffix _hip.cpp,$(EXAMPLES)))
HIP_SRCS += $(EXAMPLES_HIP_SRCS)
CUDA_SRCS += examples/kv_kernels_cuda.cu

$(B)/examples/%_cpu: examples/%_cpu.c examples/ex_host.h examples/kv_kernels.h $(LIBNKV)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIBNKV) $(LDFLAGS) $(LIBNKV_LDLIBS) -o $@

.PHONY: examples examples-cpu examples-hip
examples-cpu: $(EXAMPLES_CPU)
examples-hip: $(patsubst %,build/hip/%.o,$(EXAMPLES_HIP_SRCS))
examples: examples-cpu $(if $(shell command -v $(HIPCC) 2>/dev/null),examples-hip)
