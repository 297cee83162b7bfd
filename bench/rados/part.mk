# bench/rados: the direct librados reference loop that bench/rados/run.sh
# sets beside nkv-bench through nkv-target --backend rados and `rados
# bench`. A measuring aid, not installed (make bench-rados).
$(B)/bench/rados_loop: bench/rados/rados_loop.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ $(LDFLAGS) -lrados
.PHONY: bench-rados
bench-rados: $(B)/bench/rados_loop $(B)/bin/nkv-bench $(B)/bin/nkv-target
