# Every public header compiles on its own, first and only include, as
# strict C11 and C++17 (gcc, clang), and the GPU arch layers under nvcc and
# hipcc: one "NKV-HDR <compiler> <header>" line per check; a compiler that
# is absent is SKIP lines naming it.
stage headers run_counted NKV-HDR tests/wire/check_headers.sh \
	--nvcc "$(make -s print-nvcc)" --cuda-archs "$(make -s print-cuda-archs)" \
	--hip-archs "$(make -s print-hip-archs)"
