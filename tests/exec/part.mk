# Exec (src/target/exec/, docs/exec.md): the command end to end over
# vfio-user against an in-process target with its Exec workers.
TESTS += test_exec
test_exec_SRCS = tests/exec/test_exec.c tests/host/big_util.c $(TL_HOST)
test_exec_LIBS = $(TL_HOST_LIBS)
test_exec_LDLIBS = $(TL_HOST_LDLIBS)
