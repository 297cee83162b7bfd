# The examples' checks against a controller that lies (tests/lib/liar_be.h).
TESTS += test_ex_check
test_ex_check_SRCS = tests/examples/test_ex_check.c $(TL_HOST)
test_ex_check_LIBS = $(TL_HOST_LIBS)
test_ex_check_LDLIBS = $(TL_HOST_LDLIBS)
