# Host-side layout test of the kernel module's uapi header.
TESTS += test_kmod_uapi
test_kmod_uapi_SRCS := tests/kmod/test_kmod_uapi.c
test_kmod_uapi_LDLIBS := -lcriterion
