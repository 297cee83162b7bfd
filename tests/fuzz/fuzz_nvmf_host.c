/* SPDX-License-Identifier: MIT */
/*
 * fuzz_nvmf_host - nkv's NVMe/TCP initiator (src/nvmf/) on whatever a
 * remote sends: the input's first byte picks the digests and CPDA of an
 * ICResp, the rest is the remote's stream after it, over a socketpair.
 * The initiator has an Identify (4 KiB of C2HData) and a Store (8 KiB by
 * R2T) in flight and reaps until they complete or the association ends;
 * it must never touch memory outside the commands' buffers, whatever
 * CIDs, offsets, lengths or digests arrive.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "nvme-tcp/pdu.h"
#include "nvmf/tcp_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void *fz_drain(void *arg)
{
	int fd = *(int *)arg;
	uint8_t buf[16384];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

/* The remote's side: an ICResp, then the input, then end of stream. */
static void fz_feed(int fd, const uint8_t *data, size_t size)
{
	struct nkv_tcp_icresp r;

	memset(&r, 0, sizeof(r));
	nkv_tcp_ch_init(&r.ch, NKV_TCP_ICRESP, 0, sizeof(r), 0, sizeof(r));
	r.dgst = size ? data[0] & 3u : 0;
	r.cpda = size ? (data[0] >> 2) & 3u : 0;
	r.maxh2cdata = 4096;
	if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		return;
	if (size > 1 && write(fd, data + 1, size - 1) < 0)
		return;
	shutdown(fd, SHUT_WR);
}

static void fz_run(struct nkv_nvmf_q *q)
{
	static uint8_t id[4096], val[8192];
	struct nkv_nvmf_cmd a, b;

	memset(&a, 0, sizeof(a));
	a.sqe.cdw0 = NKV_ADM_IDENTIFY;
	a.sqe.cdw10 = NKV_CNS_CTRL;
	a.c2h = id;
	a.c2h_len = sizeof(id);
	memset(&b, 0, sizeof(b));
	b.sqe.cdw0 = NKV_KV_STORE;
	b.sqe.nsid = 1;
	b.h2c = val;
	b.h2c_len = sizeof(val);
	if (nkv_nvmf_q_submit(q, &a) || nkv_nvmf_q_submit(q, &b))
		return;
	while (nkv_nvmf_q_reap(q) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nkv_nvmf_opts o = { .size = sizeof(o), .timeout_ms = 200, .hdgst = 1, .ddgst = 1 };
	struct nkv_nvmf_addr a = { .host = "fuzz", .port = 1 };
	struct nkv_nvmf_q *q;
	pthread_t th;
	int sv[2];

	if (size > 65536 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 0;
	fz_feed(sv[1], data, size);
	pthread_create(&th, NULL, fz_drain, &sv[1]);
	if (!nkv_nvmf_q_from_fd(sv[0], &a, &o, 1, &q)) {
		fz_run(q);
		nkv_nvmf_q_close(q);
	}
	pthread_join(th, NULL);
	close(sv[1]);
	return 0;
}
