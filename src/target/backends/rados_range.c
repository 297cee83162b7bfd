/* SPDX-License-Identifier: MIT */
/*
 * rados_range.c - parts of a stored value, for Exec modules that read a
 * few ranges of a large one (backend.h read_range, exec/pager.c): a
 * TP-rank slice needs 1/8 of a 32 MiB block, and RADOS serves that 1/8
 * without reading the rest. One read op per range: a stat and a read,
 * with the object's version asserted from the second range on, so that
 * every range a module sees comes from one whole value, old or new.
 */
#include <errno.h>
#include <string.h>

#include "rados_int.h"
#include "rados.h"
#include "mem.h"

static int nkv_rados_range_op(struct nkv_be_rados *rb, const char *oid, uint64_t off,
			      uint64_t len, void *dst, uint64_t *got, uint64_t *size,
			      uint64_t *version)
{
	rados_read_op_t rop = rados_create_read_op();
	rados_completion_t c = NULL;
	size_t bytes = 0;
	time_t mtime;
	int stat_rv = 0, read_rv = 0, rv;

	if (!rop)
		return -ENOMEM;
	if (*version)
		rados_read_op_assert_version(rop, *version);
	rados_read_op_stat(rop, size, &mtime, &stat_rv);
	/* Length 0 reads "everything" to RADOS: a stat alone then. */
	if (len)
		rados_read_op_read(rop, off, len, dst, &bytes, &read_rv);
	rv = rados_aio_create_completion2(NULL, NULL, &c);
	if (rv >= 0)
		rv = rados_aio_read_op_operate(rop, rb->io, c, oid, 0);
	if (rv >= 0) {
		rados_aio_wait_for_complete(c);	/* bounded: rados_osd_op_timeout */
		rv = rados_aio_get_return_value(c);
	}
	if (rv >= 0 && !*version)
		*version = rados_aio_get_version(c);
	if (c)
		rados_aio_release(c);
	rados_release_read_op(rop);
	nkv_rados_health_note(&rb->conn->health, rv);
	*got = bytes;
	return rv;
}

int nkv_rados_read_range(struct nkv_be *be, const uint8_t *key, uint32_t klen, uint64_t off,
			 uint64_t len, void *dst, uint64_t *got, uint64_t *size,
			 uint64_t *version)
{
	struct nkv_be_rados *rb = (struct nkv_be_rados *)be;
	char oid[2 * NKV_KEY_MAX + 1];
	bool asserted = *version != 0;
	int rv;

	*got = 0;
	/* A volatile key's value is the tier's, not the object's. */
	if (rb->tier && nkv_be_mem_has(rb->tier, key, (uint8_t)klen))
		return -EOPNOTSUPP;
	nkv_rados_key_to_oid(key, klen, oid);
	rv = nkv_rados_range_op(rb, oid, off, len, dst, got, size, version);
	if (rv >= 0)
		return 0;
	/* ERANGE / EOVERFLOW: an older or newer version; ENOENT: removed. */
	if (asserted && (rv == -ERANGE || rv == -EOVERFLOW || rv == -ENOENT))
		return -ESTALE;
	return nkv_rados_status(rv);
}
