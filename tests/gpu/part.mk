# tests/gpu: programs for a lent GPU, run by tests/gpu/run.sh. Built with
# a GPU runtime (make GPU=cuda gpu-tests); CI compiles them in its
# gpu-cuda-build / gpu-hip-build stages and has no GPU to run them.
GPU_TESTS := $(B)/tests/gpu/region_check

$(B)/tests/gpu/%: tests/gpu/%.c $(LIBNKV)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIBNKV) $(LDFLAGS) $(LIBNKV_LDLIBS) -o $@

.PHONY: gpu-tests
gpu-tests: $(GPU_TESTS)
