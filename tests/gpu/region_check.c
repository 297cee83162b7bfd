/* SPDX-License-Identifier: MIT */
/*
 * region_check - on a lent GPU: values retrieved straight into GPU memory
 * the library allocates (nkv_mem_alloc with NKV_MEM_DEVICE), every byte
 * checked, and the rate set beside a plain host-to-device copy of the
 * same size by the same runtime (cudaMemcpy / hipMemcpy: the library's
 * runtime, nkv_h_gpu()). Over vfio-user GPU memory is reached by DMA
 * messages the library serves with the runtime's copies, so the copy is
 * the floor the Retrieve stands on. One line per size:
 *   NKV-GPU region-<size> PASS|FAIL|SKIP <numbers>
 * Built with a GPU runtime only (make GPU=cuda gpu-tests); run by
 * tests/gpu/run.sh against an nkv-target it starts.
 *
 *   region_check vfio-user:/path.sock
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/gpu.h"
#include "nkv_host.h"

#define RC_ROUNDS 8

static double rc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void rc_fill(uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* One size: store from a host region, retrieve RC_ROUNDS times into GPU
 * memory, copy back and compare; the runtime's own copy timed beside. */
static int rc_size(struct nkv_ctrl *c, struct nkv_qpair *q, uint32_t len)
{
	const struct nkv_gpu_ops *g = nkv_h_gpu();
	struct nkv_mr *hm = NULL, *dm = NULL;
	uint8_t *host = NULL, *back = malloc(len);
	void *dev = NULL;
	double t0, t_nkv, t_copy;
	uint32_t vlen = 0, i;
	char key[16];
	int rc;

	snprintf(key, sizeof(key), "rc-%u", len);
	rc = back ? nkv_mem_alloc(c, len, 0, &hm, (void **)&host) : -ENOMEM;
	if (!rc)
		rc = nkv_mem_alloc(c, len, NKV_MEM_DEVICE, &dm, &dev);
	if (rc) {
		printf("NKV-GPU region-%u FAIL (regions: %s)\n", len, strerror(-rc));
		goto out;
	}
	rc_fill(host, len, len);
	rc = nkv_store_mr(q, key, (uint32_t)strlen(key), 0, hm, 0, len);
	t0 = rc_now();
	for (i = 0; !rc && i < RC_ROUNDS; i++)
		rc = nkv_retrieve_mr(q, key, (uint32_t)strlen(key), dm, 0, len, &vlen);
	t_nkv = (rc_now() - t0) / RC_ROUNDS;
	if (!rc)
		rc = g->from_dev(back, (uint64_t)(uintptr_t)dev, len);
	if (rc || vlen != len || memcmp(back, host, len)) {
		printf("NKV-GPU region-%u FAIL (rc %d, %u of %u bytes, %s)\n", len, rc, vlen, len,
		       rc ? "no data" : "bytes differ");
		rc = rc ? rc : -EIO;
		goto out;
	}
	t0 = rc_now();
	for (i = 0; !rc && i < RC_ROUNDS; i++)
		rc = g->to_dev((uint64_t)(uintptr_t)dev, host, len);
	t_copy = (rc_now() - t0) / RC_ROUNDS;
	printf("NKV-GPU region-%u PASS (Retrieve into GPU memory %.2f GB/s, %.1f us; the "
	       "runtime's host-to-device copy %.2f GB/s, %.1f us; ratio %.2f)\n", len,
	       len / t_nkv / 1e9, t_nkv * 1e6, len / t_copy / 1e9, t_copy * 1e6, t_copy / t_nkv);
out:
	nkv_mem_deregister(dm);
	nkv_mem_deregister(hm);
	free(back);
	return rc;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 64u << 10, 2u << 20, 32u << 20 };
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .flags = NKV_QPAIR_NO_SLOTS };
	struct nkv_ctrl_info in;
	struct nkv_qpair *q = NULL;
	struct nkv_ctrl *c = NULL;
	unsigned i;
	int bad = 0, rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s vfio-user:/path.sock\n", argv[0]);
		return 2;
	}
	rc = nkv_ctrl_connect(argv[1], NULL, &c);
	if (!rc)
		rc = nkv_ctrl_get_info(c, &in);
	if (!rc && in.gpu_error) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			printf("NKV-GPU region-%u SKIP (no GPU: %s runtime, error %d)\n", sizes[i],
			       in.gpu, in.gpu_error);
		nkv_ctrl_close(c);
		return 0;
	}
	if (!rc)
		rc = nkv_qpair_create(c, &qo, &q);
	if (rc) {
		fprintf(stderr, "region_check: cannot connect to %s: %s\n", argv[1], strerror(-rc));
		nkv_ctrl_close(c);
		return 3;
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		bad |= rc_size(c, q, sizes[i]) != 0;
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return bad;
}
