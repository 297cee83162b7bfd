/* SPDX-License-Identifier: MIT */
/*
 * bench_mem_rss.c - what the mem backend's values cost in memory: stores
 * COUNT values of SIZE bytes in one mem namespace and prints, per value,
 * what the namespace charges (NUSE) and how much the process's resident
 * set grew (VmRSS), with the peak (VmHWM). Not a test: `make
 * bench-mem-rss`, then build/bench/bench_mem_rss [COUNTxSIZE ...]
 * (default 16x2M 4x32M; SIZE takes K, M, G), each case in a fresh
 * namespace.
 *
 * Both readings wait for the allocator's helper to finish populating its
 * lead of pages past the allocation front (valloc.h): the growth is then
 * the front's, what the values themselves took.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "target/backends/mem.h"
#include "target/backends/registry.h"
#include "target/core/core.h"

/* "VmRSS:" or "VmHWM:" of this process, in bytes. */
static uint64_t status_kib(const char *field)
{
	char line[256];
	unsigned long long kib = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			sscanf(line + strlen(field), "%llu", &kib);
	fclose(f);
	return (uint64_t)kib << 10;
}

/* VmRSS once the allocator's helper has stopped populating pages (two
 * equal readings 50 ms apart). */
static uint64_t settled_rss(void)
{
	uint64_t prev = 0, now = status_kib("VmRSS:");

	while (now != prev) {
		usleep(50000);
		prev = now;
		now = status_kib("VmRSS:");
	}
	return now;
}

static void done_cb(struct nkv_be_op *op)
{
	(void)op;	/* inline: done before submit returns */
}

static uint16_t store(struct nkv_be *be, unsigned i, void *buf, uint64_t len)
{
	struct nkv_tgt_cmd cmd;
	struct iovec iov = { buf, len };

	memset(&cmd, 0, sizeof(cmd));
	cmd.op.opc = NKV_KV_STORE;
	cmd.op.klen = (uint8_t)snprintf((char *)cmd.op.key, sizeof(cmd.op.key), "v%u", i);
	cmd.op.len = len;
	cmd.op.done = done_cb;
	cmd.iov = &iov;
	cmd.iovcnt = 1;
	nkv_tgt_data_start(&cmd, 0);
	if (be->ops->submit(be, &cmd.op))
		return 0xffff;
	nkv_tgt_data_end(&cmd);
	return cmd.op.status;
}

static int parse(const char *s, unsigned *count, uint64_t *size)
{
	char *end;
	unsigned long long v;

	*count = (unsigned)strtoul(s, &end, 10);
	if (*end++ != 'x' || !*count)
		return -1;
	v = strtoull(end, &end, 10);
	switch (*end) {
	case 'G': v <<= 10; /* fall through */
	case 'M': v <<= 10; /* fall through */
	case 'K': v <<= 10; end++; break;
	default: break;
	}
	*size = v;
	return *end || !v || v > UINT32_MAX ? -1 : 0;
}

static int run(unsigned count, uint64_t size)
{
	struct nkv_be_conf c = { sizeof(c), .capacity = 2 * count * (size + (1u << 20)),
				 .max_value = (uint32_t)size };
	char err[160];
	struct nkv_be *be;
	uint64_t rss0, rss1;
	uint8_t *buf;
	unsigned i;

	buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return -1;
	memset(buf, 0x5a, size);
	be = nkv_be_type_mem.create(&c, err, sizeof(err));
	if (!be) {
		fprintf(stderr, "bench_mem_rss: %s\n", err);
		return -1;
	}
	rss0 = settled_rss();
	for (i = 0; i < count; i++) {
		uint16_t st = store(be, i, buf, size);

		if (st) {
			fprintf(stderr, "bench_mem_rss: store %u of %llu B: status 0x%x\n", i,
				(unsigned long long)size, st);
			return -1;
		}
	}
	rss1 = settled_rss();
	printf("%3u x %9llu B: charged %llu B/value (%.4fx), RSS +%llu B/value (%.4fx), "
	       "VmRSS %llu MiB, VmHWM %llu MiB\n",
	       count, (unsigned long long)size,
	       (unsigned long long)(be->ops->bytes_used(be) / count),
	       (double)be->ops->bytes_used(be) / count / size,
	       (unsigned long long)((rss1 - rss0) / count), (double)(rss1 - rss0) / count / size,
	       (unsigned long long)(rss1 >> 20), (unsigned long long)(status_kib("VmHWM:") >> 20));
	be->ops->destroy(be);
	munmap(buf, size);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *defaults[] = { "16x2M", "4x32M" };
	const char **cases = argc > 1 ? (const char **)argv + 1 : defaults;
	int n = argc > 1 ? argc - 1 : 2, i;

	for (i = 0; i < n; i++) {
		unsigned count;
		uint64_t size;

		if (parse(cases[i], &count, &size)) {
			fprintf(stderr, "usage: bench_mem_rss [COUNTxSIZE ...] (e.g. 16x2M 4x32M)\n");
			return 2;
		}
		if (run(count, size))
			return 1;
	}
	return 0;
}
