# RADOS backend of nkv-target (librados). Programs and tests that link
# libnkvtarget.a add $(TARGET_LDLIBS).
TARGET_SRCS += src/target/backends/rados.c
TARGET_LDLIBS += -lrados
