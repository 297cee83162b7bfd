# Device-side suites: the wave API against fake controllers, the wire
# structures, the cpu engine.
DEV_TEST_LIBS = $(LIBNKV)
TESTS += test_wave_submit test_wave_threads
test_wave_submit_SRCS = tests/device/test_wave_submit.c $(TL_FAKE_CTRL)
test_wave_submit_LIBS = $(DEV_TEST_LIBS)
test_wave_submit_LDLIBS := -lcriterion
test_wave_threads_SRCS = tests/device/test_wave_threads.c $(TL_FAKE_CTRL)
test_wave_threads_LIBS = $(DEV_TEST_LIBS)
test_wave_threads_LDLIBS := -lcriterion
TSAN_TESTS += test_wave_threads
TESTS += test_sqe test_list
test_sqe_SRCS := tests/device/test_sqe.c
test_sqe_LDLIBS := -lcriterion
test_list_SRCS := tests/device/test_list.c
test_list_LDLIBS := -lcriterion
TESTS += test_wave_check
test_wave_check_SRCS = tests/device/test_wave_check.c $(TL_FAKE_CTRL)
test_wave_check_LIBS = $(DEV_TEST_LIBS)
test_wave_check_LDLIBS := -lcriterion
TESTS += test_cqe test_cpu_engine
test_cqe_SRCS = tests/device/test_cqe.c $(TL_FAKE_CTRL)
test_cqe_LIBS = $(DEV_TEST_LIBS)
test_cqe_LDLIBS := -lcriterion
test_cpu_engine_SRCS := tests/device/test_cpu_engine.c
test_cpu_engine_LIBS = $(DEV_TEST_LIBS)
test_cpu_engine_LDLIBS := -lcriterion
