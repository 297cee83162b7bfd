# nkv top-level Makefile. Each part adds its sources, programs and tests in
# its own fragment (*.mk one or two levels down); this file holds the shared rules only.
#
#   make               library, tools (build/bin), tests (build/tests)
#   make SAN=asan      the same with ASan+UBSan, under build/asan
#   make SAN=tsan      the same with TSan, under build/tsan
#   make GPU=cuda      libnkv (and tools) with the CUDA runtime, under build/gpu-cuda
#   make GPU=hip       libnkv (and tools) with the HIP runtime, under build/gpu-hip
#   make hip           device code through hipcc (HIP_ARCHS)
#   make cuda          device code through nvcc (CUDA_ARCHS)
#   make check         the whole test suite (scripts/test.sh without apt)
#   make clean

SAN ?=
BUILD ?= build
# GPU= (none: the emulated runtime, what CI runs), cuda or hip.
GPU ?=
ifneq ($(filter-out cuda hip,$(GPU)),)
$(error GPU=$(GPU): say GPU=cuda or GPU=hip, or leave it out)
endif
ifneq ($(GPU),)
BUILD := $(BUILD)/gpu-$(GPU)
endif
ifeq ($(SAN),)
B := $(BUILD)
else
B := $(BUILD)/$(SAN)
endif

CC ?= cc
CXX ?= c++
HIPCC ?= hipcc
NVCC ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
# Debian's ROCm 5.2 device libraries stop at gfx940; override for newer GPUs.
HIP_ARCHS ?= gfx908 gfx90a gfx940 gfx1030
CUDA_ARCHS ?= sm_80 sm_90

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-missing-field-initializers
CPPFLAGS += -Iinclude -Isrc -D_GNU_SOURCE
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -fPIC -pthread $(WARN)
LDFLAGS += -pthread

# Extra objects linked into every test, and libraries never to link.
TEST_EXTRA_OBJS :=
NOLINK :=

ifeq ($(SAN),asan)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
endif
ifeq ($(SAN),tsan)
# TSan does not model standalone fences (it may then report false races,
# never hide real ones); MMIO ordering fences in the transports are kept.
CFLAGS += -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan
LDFLAGS += -fsanitize=thread
# Criterion cannot start under TSan (Snaipe/Criterion#274): race suites
# build against a small stand-in with the same macros and summary line.
CPPFLAGS := -Itests/lib/tsan $(CPPFLAGS)
TEST_EXTRA_OBJS = $(B)/obj/tests/lib/tsan/shim.o
NOLINK := -lcriterion
endif

# Filled by the fragments.
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
LIBNKV_SRCS :=
TARGET_SRCS :=
PROGRAMS :=
TESTS :=
HIP_SRCS :=
CUDA_SRCS :=
TSAN_TESTS :=
# System libraries a program linking libnkv.a / libnkvtarget.a adds.
LIBNKV_LDLIBS :=
TARGET_LDLIBS :=
# The GPU runtime's headers for its one source file, its library for
# everything that links libnkv.
ifeq ($(GPU),cuda)
$(B)/obj/src/host/gpu_cuda.o: CPPFLAGS += -I$(CUDA_HOME)/include
LIBNKV_LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart
endif
ifeq ($(GPU),hip)
$(B)/obj/src/host/gpu_hip.o: CPPFLAGS += -D__HIP_PLATFORM_AMD__
LIBNKV_LDLIBS += -lamdhip64
endif

VERSION := 0.6.0
SOVERSION := 2
LIBNKV := $(B)/lib/libnkv.a
LIBNKV_SO := $(B)/lib/libnkv.so.$(VERSION)
LIBNKVTGT := $(B)/lib/libnkvtarget.a

# Plain `make` builds all, whatever the fragments define first.
.DEFAULT_GOAL := all

# Fragments: every *.mk one or two levels down (src/target/part.mk, ...).
include $(sort $(wildcard */*.mk */*/*.mk))

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

# The programs' --version (tools/exit.h) says the VERSION above; a new
# one rebuilds them.
NKV_VERSIONED_OBJS := $(call obj,src/target/main.c bench/opts.c src/tools/nkv_probe.c \
	src/tools/nkv_admin.c)
$(NKV_VERSIONED_OBJS): CPPFLAGS += -DNKV_VERSION='"$(VERSION)"'
$(NKV_VERSIONED_OBJS): Makefile

.PHONY: all lib programs tests tsan-tests check hip cuda clean install
all: lib programs tests
lib: $(LIBNKV) $(LIBNKV_SO) $(if $(TARGET_SRCS),$(LIBNKVTGT))
programs: $(addprefix $(B)/bin/,$(PROGRAMS))
tests: $(addprefix $(B)/tests/,$(TESTS))
# Only the suites that hunt races run under TSan (scripts/test.sh).
tsan-tests: $(addprefix $(B)/tests/,$(TSAN_TESTS))

$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIBNKV): $(call obj,$(LIBNKV_SRCS))
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# The shared library exports only the public API (src/libnkv.map).
$(LIBNKV_SO): $(call obj,$(LIBNKV_SRCS)) src/libnkv.map
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libnkv.so.$(SOVERSION) \
		-Wl,--version-script=src/libnkv.map -Wl,--no-undefined \
		$(call obj,$(LIBNKV_SRCS)) $(LIBNKV_LDLIBS) -o $@
	ln -sf libnkv.so.$(VERSION) $(B)/lib/libnkv.so.$(SOVERSION)
	ln -sf libnkv.so.$(SOVERSION) $(B)/lib/libnkv.so

$(LIBNKVTGT): $(call obj,$(TARGET_SRCS))
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# A program or test NAME declares NAME_SRCS, and optionally NAME_LIBS
# (archives built here) and NAME_LDLIBS (system libraries).
define link_template
$(2)/$(1): $$(call obj,$$($(1)_SRCS)) $(3) $$($(1)_LIBS)
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) $$^ $$(filter-out $$(NOLINK),$$($(1)_LDLIBS)) -o $$@
endef
$(foreach p,$(PROGRAMS),$(eval $(call link_template,$(p),$(B)/bin)))
$(foreach t,$(TESTS),$(eval $(call link_template,$(t),$(B)/tests,$(TEST_EXTRA_OBJS))))

# Device code through the GPU compilers: compile-only proofs (no GPU here).
HIP_FLAGS := -std=c++17 -Wall -Wextra -Werror -Iinclude -Isrc $(addprefix --offload-arch=,$(HIP_ARCHS))
CUDA_FLAGS := -std=c++17 -Iinclude -Isrc -Werror all-warnings \
	$(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(subst sm_,,$(a)),code=$(a))
hip: $(patsubst %,build/hip/%.o,$(HIP_SRCS))
cuda: $(patsubst %,build/cuda/%.o,$(CUDA_SRCS))
# Device sources include headers from these places; any change rebuilds.
GPU_HEADERS := $(wildcard include/*.h src/device/*.h examples/*.h)
build/hip/%.o: % $(GPU_HEADERS)
	@mkdir -p $(@D)
	$(HIPCC) $(HIP_FLAGS) -x hip -c $< -o $@
build/cuda/%.o: % $(GPU_HEADERS)
	@mkdir -p $(@D)
	$(NVCC) $(CUDA_FLAGS) -x cu -c $< -o $@

check:
	NKV_SKIP_DEPS=1 scripts/test.sh

# make install [PREFIX=/usr/local] [DESTDIR=...]: libraries, headers,
# pkg-config file, tools and their man pages.
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
# The Python package (python/nkv, docs/python.md), for Debian's python3:
# /usr/lib/python3/dist-packages under PREFIX /usr, else
# PREFIX/lib/python3.X/dist-packages (on its path for /usr/local; other
# prefixes: PYTHONPATH). Its _config.py names the installed libnkv.
PYTHON ?= /usr/bin/python3
PYVER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYDIR ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(or $(PYVER),3)/dist-packages)
PY_FILES := $(wildcard python/nkv/*.py)
PUBLIC_HEADERS := include/nkv_wire.h include/nkv_errno.h include/nkv_list.h include/nkv_dev.h \
	include/nkv_block.h include/nkv_kvcache.h include/nkv_host.h include/nkv_cpu.h \
	include/nkv_arch_cpu.h include/nkv_arch_hip.h include/nkv_arch_cuda.h include/nkv_kmod.h
MANPAGES := $(wildcard docs/man/*.1)
# nkv-target as a service (docs/service.md): its units name BINDIR and
# SYSCONFDIR/nkv/ (the config files); systemd reads PREFIX/lib/systemd
# for /usr and /usr/local. The example config goes to DATADIR/nkv.
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(if $(filter /usr/local,$(PREFIX)),/etc,$(PREFIX)/etc))
DATADIR ?= $(PREFIX)/share
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
UNITS := nkv-target.service nkv-target@.service
$(B)/share/systemd/%: share/systemd/%.in Makefile
	@mkdir -p $(@D)
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< > $@
install: lib programs $(addprefix $(B)/share/systemd/,$(UNITS))
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR)
	install -m 644 $(LIBNKV) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIBNKV_SO) $(DESTDIR)$(LIBDIR)/
	$(if $(NKV_TCP_PLUGIN),install -m 755 $(NKV_TCP_PLUGIN) $(DESTDIR)$(LIBDIR)/)
	ln -sf libnkv.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libnkv.so.$(SOVERSION)
	ln -sf libnkv.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libnkv.so
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@LIBS_PRIVATE@|$(LIBNKV_LDLIBS)|' nkv.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/nkv.pc
	install -m 755 $(addprefix $(B)/bin/,$(PROGRAMS)) $(DESTDIR)$(BINDIR)/
	$(if $(MANPAGES),install -d $(DESTDIR)$(MANDIR)/man1 && install -m 644 $(MANPAGES) $(DESTDIR)$(MANDIR)/man1/)
	install -d $(DESTDIR)$(PYDIR)/nkv
	install -m 644 $(filter-out python/nkv/_config.py,$(PY_FILES)) $(DESTDIR)$(PYDIR)/nkv/
	echo 'LIBNKV = "$(LIBDIR)/libnkv.so.$(SOVERSION)"' > $(DESTDIR)$(PYDIR)/nkv/_config.py
	install -d $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(DATADIR)/nkv
	install -m 644 $(addprefix $(B)/share/systemd/,$(UNITS)) $(DESTDIR)$(SYSTEMDUNITDIR)/
	install -m 644 share/systemd/nkv-tmpfiles.conf $(DESTDIR)$(TMPFILESDIR)/nkv.conf
	install -m 644 share/nkv/nkv-target.conf.example $(DESTDIR)$(DATADIR)/nkv/
	@echo "libnkv.so.$(SOVERSION) is in $(LIBDIR). A program linked with it finds it at run time"
	@echo "only where the dynamic linker looks (README \"Installing\"):"
	@echo "  a system directory (/usr/local/lib, /usr/lib): run ldconfig (as root) once;"
	@echo "  any other: link with -Wl,-rpath,$(LIBDIR) (the programs installed here"
	@echo "  link libnkv statically and need neither), or set LD_LIBRARY_PATH=$(LIBDIR)."

clean:
	rm -rf build

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# Lists scripts/test.sh asks for.
print-tsan-tests:
	@echo $(TSAN_TESTS)
print-pydir:
	@echo $(PYDIR)
print-nvcc:
	@echo $(NVCC)
print-cuda-archs:
	@echo $(CUDA_ARCHS)
print-cuda-home:
	@echo $(CUDA_HOME)
print-hip-archs:
	@echo $(HIP_ARCHS)
.PHONY: print-tsan-tests print-pydir print-nvcc print-cuda-archs print-cuda-home print-hip-archs
