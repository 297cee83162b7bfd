# bench/rados: the direct librados reference loop that bench/rados/run.sh
# sets beside nkv-bench through nkv-target --backend rados and `rados
# bench`; --via backend drives nkv-target's RADOS backend itself, hence
# libnkvtarget. A measuring aid, not installed (make bench-rados).
$(B)/bench/rados_loop: bench/rados/rados_loop.c $(LIBNKVTGT)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIBNKVTGT) -o $@ $(LDFLAGS) $(TARGET_LDLIBS)
.PHONY: bench-rados
bench-rados: $(B)/bench/rados_loop $(B)/bin/nkv-bench $(B)/bin/nkv-target
# bench/rocksdb: the plain RocksDB loop (the backend's options, batches
# written with one sync) that bench/compare.py's rocksdb part sets beside
# nkv-target --backend rocksdb; --via backend drives that backend itself,
# hence libnkvtarget. A measuring aid, not installed.
$(B)/bench/rocks_loop: bench/rocksdb/rocks_loop.c bench/loop_util.h $(LIBNKVTGT)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ibench $(CFLAGS) $< $(LIBNKVTGT) -o $@ $(LDFLAGS) $(TARGET_LDLIBS)
.PHONY: bench-rocks
bench-rocks: $(B)/bench/rocks_loop
