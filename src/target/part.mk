# nkv-target controller core (src/target), built into libnkvtarget.a.
TARGET_SRCS += src/target/dma.c src/target/ctrl.c src/target/regs.c \
	src/target/queue.c src/target/handoff.c src/target/admin.c \
	src/target/io_kv.c src/target/io_nvm.c src/target/stats.c \
	src/target/be_mem.c
