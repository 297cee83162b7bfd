# RADOS backend of nkv-target (librados; its source is in part.mk's
# backends). Programs and tests that link libnkvtarget.a add $(TARGET_LDLIBS).
TARGET_LDLIBS += -lrados
