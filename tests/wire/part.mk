# Wire layer tests; the C++17 probe is built with g++ (a failure fails the build).
TESTS += test_wire
test_wire_SRCS := tests/wire/test_wire.c
test_wire_LIBS = $(B)/obj/tests/wire/cxx_probe.o $(LIBNKV)
test_wire_LDLIBS := -lcriterion
$(B)/obj/tests/wire/cxx_probe.o: tests/wire/cxx_probe.cpp include/nkv_wire.h include/nkv_dev.h \
		include/nkv_list.h include/nkv_arch_cpu.h include/nkv_host.h include/nkv_cpu.h
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -Wall -Wextra -Werror -Wshadow $(CPPFLAGS) -O2 -fPIC \
		$(filter -fsanitize=% -fno-sanitize%,$(CFLAGS)) -c $< -o $@
