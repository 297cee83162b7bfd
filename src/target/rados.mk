# RADOS backend of nkv-target (librados; its source is in part.mk's
# backends). Programs and tests that link libnkvtarget.a add $(TARGET_LDLIBS).
TARGET_LDLIBS += -lrados

TESTS += test_be_rados
test_be_rados_SRCS := tests/target/test_be_rados.c tests/target/ceph_cluster.c
test_be_rados_LIBS = $(LIBNKVTGT)
test_be_rados_LDLIBS = $(TARGET_LDLIBS) -lcriterion
