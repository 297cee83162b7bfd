# The embedded target (src/target/embed.h): subsystem, registry backends
# and vfio-user server as threads of another program (nkv-bench, tests).
TARGET_SRCS += src/target/embed.c
