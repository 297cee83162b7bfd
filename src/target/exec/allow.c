/* SPDX-License-Identifier: MIT */
/*
 * allow.c - the Exec allowlist: deny by default; a row binds (nsid,
 * op-ID) to a module by its SHA-256, the key it is stored under (same
 * namespace) and the caps of one call. Rows are kept sorted, looked up by
 * binary search under a reader lock (one per Exec), changed under the
 * writer lock (RPC, config).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

static pthread_rwlock_t nkv_exec_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct nkv_exec_entry nkv_exec_rows[NKV_EXEC_MAX_ENTRIES];
static size_t nkv_exec_nrows;

void nkv_exec_caps_fill(struct nkv_exec_caps *c)
{
	if (!c->max_instructions)
		c->max_instructions = NKV_EXEC_DEF_INSTRUCTIONS;
	if (!c->max_memory)
		c->max_memory = NKV_EXEC_DEF_MEMORY;
	if (!c->max_output)
		c->max_output = NKV_EXEC_DEF_OUTPUT;
	if (!c->max_wall_ms)
		c->max_wall_ms = NKV_EXEC_DEF_WALL_MS;
}

static int nkv_exec_cmp(uint32_t nsid, uint32_t op_id, const struct nkv_exec_entry *e)
{
	if (nsid != e->nsid)
		return nsid < e->nsid ? -1 : 1;
	return op_id == e->op_id ? 0 : op_id < e->op_id ? -1 : 1;
}

/* The row of (nsid, op_id), or where it would go (*found 0). Locked. */
static size_t nkv_exec_find(uint32_t nsid, uint32_t op_id, int *found)
{
	size_t lo = 0, hi = nkv_exec_nrows;

	*found = 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = nkv_exec_cmp(nsid, op_id, &nkv_exec_rows[mid]);

		if (!c) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int nkv_exec_caps_check(const struct nkv_exec_caps *c)
{
	return c->max_memory > NKV_EXEC_MAX_MEMORY || c->max_wall_ms > NKV_EXEC_MAX_WALL_MS ?
		       -EINVAL : 0;
}

int nkv_exec_allow(const struct nkv_exec_entry *e)
{
	struct nkv_exec_entry row = *e;
	size_t i;
	int found, rc = 0;

	nkv_exec_caps_fill(&row.caps);
	if (!row.nsid || !row.klen || row.klen > NKV_KEY_MAX || nkv_exec_caps_check(&row.caps))
		return -EINVAL;
	memset(row.key + row.klen, 0, sizeof(row.key) - row.klen);
	pthread_rwlock_wrlock(&nkv_exec_lock);
	i = nkv_exec_find(row.nsid, row.op_id, &found);
	if (!found && nkv_exec_nrows == NKV_EXEC_MAX_ENTRIES) {
		rc = -ENOSPC;
	} else if (!found) {
		memmove(&nkv_exec_rows[i + 1], &nkv_exec_rows[i],
			(nkv_exec_nrows - i) * sizeof(nkv_exec_rows[0]));
		nkv_exec_nrows++;
	}
	if (!rc)
		nkv_exec_rows[i] = row;
	pthread_rwlock_unlock(&nkv_exec_lock);
	return rc;
}

int nkv_exec_deny(uint32_t nsid, uint32_t op_id)
{
	size_t i;
	int found;

	pthread_rwlock_wrlock(&nkv_exec_lock);
	i = nkv_exec_find(nsid, op_id, &found);
	if (found) {
		memmove(&nkv_exec_rows[i], &nkv_exec_rows[i + 1],
			(nkv_exec_nrows - i - 1) * sizeof(nkv_exec_rows[0]));
		nkv_exec_nrows--;
	}
	pthread_rwlock_unlock(&nkv_exec_lock);
	return found ? 0 : -ENOENT;
}

int nkv_exec_lookup(uint32_t nsid, uint32_t op_id, struct nkv_exec_entry *e)
{
	size_t i;
	int found;

	pthread_rwlock_rdlock(&nkv_exec_lock);
	i = nkv_exec_find(nsid, op_id, &found);
	if (found)
		*e = nkv_exec_rows[i];
	pthread_rwlock_unlock(&nkv_exec_lock);
	return found ? 0 : -ENOENT;
}

size_t nkv_exec_list(struct nkv_exec_entry *out, size_t max)
{
	size_t n;

	pthread_rwlock_rdlock(&nkv_exec_lock);
	n = nkv_exec_nrows;
	memcpy(out, nkv_exec_rows, (n < max ? n : max) * sizeof(*out));
	pthread_rwlock_unlock(&nkv_exec_lock);
	return n;
}

void nkv_exec_clear(void)
{
	pthread_rwlock_wrlock(&nkv_exec_lock);
	nkv_exec_nrows = 0;
	pthread_rwlock_unlock(&nkv_exec_lock);
}

static int nkv_exec_nib(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int nkv_exec_unhex(const char *hex, uint8_t *out, size_t max)
{
	size_t n = strlen(hex), i;

	if (n % 2 || n / 2 > max)
		return -EINVAL;
	for (i = 0; i < n / 2; i++) {
		int hi = nkv_exec_nib(hex[2 * i]), lo = nkv_exec_nib(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (int)(n / 2);
}

void nkv_exec_hex(const uint8_t *in, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = d[in[i] >> 4];
		out[2 * i + 1] = d[in[i] & 15];
	}
	out[2 * n] = 0;
}

/* One decimal field of a config row: 0 or -EINVAL. */
static int nkv_exec_num(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end || *v > max ? -EINVAL : 0;
}

int nkv_exec_entry_parse(const char *s, struct nkv_exec_entry *e)
{
	char buf[1024], *f[8], *save = NULL, *t;
	uint64_t v[8] = { 0 };
	int n = 0, i, k;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (t = strtok_r(buf, ":", &save); t && n < 8; t = strtok_r(NULL, ":", &save))
		f[n++] = t;
	if ((n != 4 && n != 8) || t)
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	if (nkv_exec_num(f[0], UINT32_MAX, &v[0]) || nkv_exec_num(f[1], UINT32_MAX, &v[1]) ||
	    nkv_exec_unhex(f[2], e->digest, sizeof(e->digest)) != NKV_EXEC_DIGEST_LEN)
		return -EINVAL;
	k = nkv_exec_unhex(f[3], e->key, sizeof(e->key));
	if (k <= 0)
		return -EINVAL;
	for (i = 4; i < n; i++)
		if (nkv_exec_num(f[i], i == 5 ? NKV_EXEC_MAX_MEMORY : UINT32_MAX, &v[i]))
			return -EINVAL;
	e->nsid = (uint32_t)v[0];
	e->op_id = (uint32_t)v[1];
	e->klen = (uint32_t)k;
	e->caps.max_instructions = v[4];
	e->caps.max_memory = v[5];
	e->caps.max_output = (uint32_t)v[6];
	e->caps.max_wall_ms = (uint32_t)v[7];
	return e->nsid ? 0 : -EINVAL;
}
