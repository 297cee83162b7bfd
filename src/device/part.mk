# Device side: the cpu engine (into libnkv.a), GPU compile proofs, tests.
LIBNKV_SRCS += src/device/cpu/engine.c src/device/cpu/fiber.c src/device/cpu/ctx_switch.c
HIP_SRCS += src/device/wave_kernels_hip.cpp
CUDA_SRCS += src/device/wave_kernels_cuda.cu

DEV_TEST_LIBS = $(LIBNKV)
TESTS += test_wave_submit test_wave_threads
test_wave_submit_SRCS := tests/device/test_wave_submit.c tests/device/fake_ctrl.c
test_wave_submit_LIBS = $(DEV_TEST_LIBS)
test_wave_submit_LDLIBS := -lcriterion
test_wave_threads_SRCS := tests/device/test_wave_threads.c tests/device/fake_ctrl.c
test_wave_threads_LIBS = $(DEV_TEST_LIBS)
test_wave_threads_LDLIBS := -lcriterion
TSAN_TESTS += test_wave_threads
TESTS += test_sqe test_list
test_sqe_SRCS := tests/device/test_sqe.c
test_sqe_LDLIBS := -lcriterion
test_list_SRCS := tests/device/test_list.c
test_list_LDLIBS := -lcriterion
TESTS += test_wave_check
test_wave_check_SRCS := tests/device/test_wave_check.c tests/device/fake_ctrl.c
test_wave_check_LIBS = $(DEV_TEST_LIBS)
test_wave_check_LDLIBS := -lcriterion
TESTS += test_cqe test_cpu_engine
test_cqe_SRCS := tests/device/test_cqe.c tests/device/fake_ctrl.c
test_cqe_LIBS = $(DEV_TEST_LIBS)
test_cqe_LDLIBS := -lcriterion
test_cpu_engine_SRCS := tests/device/test_cpu_engine.c
test_cpu_engine_LIBS = $(DEV_TEST_LIBS)
test_cpu_engine_LDLIBS := -lcriterion

# Wire layer tests; the C++17 probe is built with g++ (a failure fails the build).
TESTS += test_wire
test_wire_SRCS := tests/wire/test_wire.c
test_wire_LIBS = $(B)/obj/tests/wire/cxx_probe.o $(LIBNKV)
test_wire_LDLIBS := -lcriterion
$(B)/obj/tests/wire/cxx_probe.o: tests/wire/cxx_probe.cpp include/nkv_wire.h include/nkv_dev.h include/nkv_arch_cpu.h \
		include/nkv_host.h include/nkv_cpu.h
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -Wall -Wextra -Werror -Wshadow $(CPPFLAGS) -O2 -fPIC \
		$(filter -fsanitize=% -fno-sanitize%,$(CFLAGS)) -c $< -o $@
