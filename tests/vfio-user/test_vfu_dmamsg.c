/* SPDX-License-Identifier: MIT */
/* test_vfu_dmamsg.c - values in client memory registered without an fd
 * (issue 14): nkv-target reaches it with DMA_READ / DMA_WRITE messages.
 * Queues live in a memfd set up by vfu_util's driver; a peer thread on the
 * same socket owns an "arena" it maps without an fd and answers the
 * target's messages, well or badly: every op byte for byte, then a peer
 * that answers with an error, short, not at all, or sends a request of
 * its own before its answer. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nkv_wire.h"
#include "vfio-user/client.h"
#include "vfio-user/msg.h"
#include "vfu_util.h"

#define ARENA_PAGES 16
#define DTE NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_DATA_XFER_ERROR)

enum peer_mode { PEER_OK, PEER_ERROR, PEER_SHORT, PEER_SILENT, PEER_INTERLEAVE, PEER_SLOW };

struct peer {
	int fd;
	uint8_t *arena;
	pthread_t thr;
	int stop;			/* atomic */
	int mode;			/* atomic: enum peer_mode */
	int reads, writes;		/* atomic: messages served */
	int region_replies;		/* atomic: replies to our own requests */
	int bad;			/* atomic: something unexpected came */
};

static struct tl_server srv;
static struct vt_nvme nv;
static struct peer pr;

static void short_msgs(struct nkv_vfu_server_opts *o) { o->msg_ms = 300; }
static void up(void) { cr_assert_eq(vt_server_start_with(&srv, 0, short_msgs), 0); }
static void down(void) { tl_server_stop(&srv); }

static uint64_t arena_iova(unsigned page) { return (uint64_t)(uintptr_t)(pr.arena + page * NKV_PAGE_SIZE); }

static int in_arena(uint64_t addr, uint64_t count)
{
	uint64_t base = arena_iova(0);

	return addr >= base && count <= ARENA_PAGES * NKV_PAGE_SIZE &&
	       addr - base <= ARENA_PAGES * NKV_PAGE_SIZE - count;
}

/* Answer one DMA_READ / DMA_WRITE as the mode says. */
static void peer_serve(struct peer *p, struct nkv_vfu_msg *m)
{
	int mode = __atomic_load_n(&p->mode, __ATOMIC_ACQUIRE);
	struct nkv_vfu_hdr h = { m->hdr.msg_id, m->hdr.cmd, 0, NKV_VFU_TYPE_REPLY, 0 };
	struct nkv_vfu_dma_rw rw;
	uint8_t *out;
	size_t n;

	if (m->len < sizeof(rw)) {
		__atomic_store_n(&p->bad, 1, __ATOMIC_RELEASE);
		return;
	}
	memcpy(&rw, m->payload, sizeof(rw));
	if (!in_arena(rw.addr, rw.count) ||
	    (m->hdr.cmd == NKV_VFU_DMA_WRITE && m->len != sizeof(rw) + rw.count)) {
		__atomic_store_n(&p->bad, 1, __ATOMIC_RELEASE);
		return;
	}
	if (mode == PEER_SILENT)
		return;
	if (mode == PEER_INTERLEAVE) {	/* a request of ours first */
		struct nkv_vfu_region_rw rr = { NKV_REG_CSTS, NKV_VFU_BAR0, 4 };
		struct nkv_vfu_hdr q = { 0x7777, NKV_VFU_REGION_READ, 0, NKV_VFU_TYPE_COMMAND, 0 };

		nkv_vfu_send(p->fd, &q, &rr, sizeof(rr), NULL, 0);
	}
	if (mode == PEER_ERROR) {
		h.flags |= NKV_VFU_F_ERROR;
		h.error = EFAULT;
		nkv_vfu_send(p->fd, &h, NULL, 0, NULL, 0);
		return;
	}
	uint8_t *a = p->arena + (rw.addr - arena_iova(0));

	if (m->hdr.cmd == NKV_VFU_DMA_WRITE) {
		if (mode == PEER_SLOW)	/* data lands late: the CQE must wait */
			usleep(50000);
		__atomic_add_fetch(&p->writes, 1, __ATOMIC_RELAXED);
		memcpy(a, m->payload + sizeof(rw), rw.count);
		nkv_vfu_send(p->fd, &h, &rw, mode == PEER_SHORT ? 8 : sizeof(rw), NULL, 0);
		return;
	}
	__atomic_add_fetch(&p->reads, 1, __ATOMIC_RELAXED);
	n = sizeof(rw) + rw.count - (mode == PEER_SHORT ? 1 : 0);
	out = malloc(sizeof(rw) + rw.count);
	memcpy(out, &rw, sizeof(rw));
	memcpy(out + sizeof(rw), a, rw.count);
	nkv_vfu_send(p->fd, &h, out, n, NULL, 0);
	free(out);
}

static void *peer_main(void *arg)
{
	struct peer *p = arg;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd pf = { .fd = p->fd, .events = POLLIN };
		struct nkv_vfu_msg m;

		if (poll(&pf, 1, 20) <= 0)
			continue;
		if (nkv_vfu_recv(p->fd, &m, NKV_VFU_MAX_MSG))
			break;	/* the target dropped us */
		if (nkv_vfu_type(m.hdr.flags) == NKV_VFU_TYPE_REPLY)
			__atomic_add_fetch(&p->region_replies,
					   m.hdr.msg_id == 0x7777 && !(m.hdr.flags & NKV_VFU_F_ERROR),
					   __ATOMIC_RELAXED);
		else if (m.hdr.cmd == NKV_VFU_DMA_READ || m.hdr.cmd == NKV_VFU_DMA_WRITE)
			peer_serve(p, &m);
		else
			__atomic_store_n(&p->bad, 1, __ATOMIC_RELEASE);
		nkv_vfu_msg_free(&m);
	}
	return NULL;
}

/* Driver up, the arena mapped without an fd (raw, before the peer reads
 * the socket), the peer started. */
static void peer_up(int mode)
{
	struct nkv_vfu_dma_map dm = { sizeof(dm), NKV_VFU_DMA_F_READ | NKV_VFU_DMA_F_WRITE, 0, 0,
				      ARENA_PAGES * NKV_PAGE_SIZE };
	struct nkv_vfu_hdr h = { 0x4242, NKV_VFU_DMA_MAP, 0, NKV_VFU_TYPE_COMMAND, 0 };
	struct nkv_vfu_msg m;

	cr_assert_eq(vt_nvme_up(&nv, srv.path), 0);
	memset(&pr, 0, sizeof(pr));
	pr.fd = nkv_vfu_client_fd(nv.tr);
	pr.mode = mode;
	pr.arena = aligned_alloc(NKV_PAGE_SIZE, ARENA_PAGES * NKV_PAGE_SIZE);
	cr_assert(pr.arena);
	memset(pr.arena, 0xee, ARENA_PAGES * NKV_PAGE_SIZE);
	dm.addr = arena_iova(0);
	cr_assert_eq(nkv_vfu_send(pr.fd, &h, &dm, sizeof(dm), NULL, 0), 0);
	cr_assert_eq(nkv_vfu_recv(pr.fd, &m, NKV_VFU_MAX_MSG), 0);
	cr_assert_eq(m.hdr.msg_id, 0x4242);
	cr_assert_eq(m.hdr.flags & NKV_VFU_F_ERROR, 0, "DMA_MAP without fd: errno %u", m.hdr.error);
	nkv_vfu_msg_free(&m);
	cr_assert_eq(pthread_create(&pr.thr, NULL, peer_main, &pr), 0);
}

static void peer_down(void)
{
	__atomic_store_n(&pr.stop, 1, __ATOMIC_RELEASE);
	pthread_join(pr.thr, NULL);
	vt_nvme_down(&nv);
	free(pr.arena);
}

static int kv(uint8_t opc, const char *key, uint64_t prp1, uint64_t prp2, uint32_t len,
	      uint32_t *dw0)
{
	struct nkv_sqe s;

	vt_kv_sqe(&s, opc, key, prp1, len);
	s.prp2 = prp2;
	return vt_cmd(&nv, 1, &s, dw0);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31u + seed * 7u + 1u);
}

Test(vfu_dmamsg, every_op_byte_for_byte, .init = up, .fini = down)
{
	static const uint32_t sizes[] = { 1, 100, 4096, 3 * 4096 + 17 };
	uint8_t *want = malloc(4 * NKV_PAGE_SIZE);
	uint64_t *list;
	uint32_t dw0, cnt, i, k;
	char key[16];

	peer_up(PEER_OK);
	list = vt_page(&nv, VT_DATA);	/* PRP list in fd memory, data in the arena */
	for (i = 0; i < 4; i++) {
		uint32_t len = sizes[i];
		uint64_t prp2 = len > 2 * 4096 ? vt_iova(&nv, VT_DATA) : arena_iova(1);

		list[0] = arena_iova(1);
		list[1] = arena_iova(2);
		list[2] = arena_iova(3);
		snprintf(key, sizeof(key), "dm%u", i);
		fill(want, len, i);
		memcpy(pr.arena, want, len);
		cr_assert_eq(kv(NKV_KV_STORE, key, arena_iova(0), prp2, len, NULL), 0, "store %u", len);
		memset(pr.arena + 4 * 4096, 0, 4 * 4096);
		list[0] = arena_iova(5);
		list[1] = arena_iova(6);
		list[2] = arena_iova(7);
		cr_assert_eq(kv(NKV_KV_RETRIEVE, key, arena_iova(4),
				len > 2 * 4096 ? vt_iova(&nv, VT_DATA) : arena_iova(5), len, &dw0), 0);
		cr_assert_eq(dw0, len);
		cr_assert_eq(memcmp(pr.arena + 4 * 4096, want, len), 0, "retrieve %u", len);
		cr_assert_eq(kv(NKV_KV_EXIST, key, 0, 0, 0, NULL), 0);
	}
	/* A buffer half mapped (PRP1 in the memfd), half message-only (PRP2):
	 * a value wholly in the mapped half, then one across both. */
	{
		uint8_t *mapped = vt_page(&nv, VT_DATA + 1);

		memset(mapped, 0, 4096);
		memset(pr.arena + 10 * 4096, 0, 4096);
		cr_assert_eq(kv(NKV_KV_RETRIEVE, "dm1", vt_iova(&nv, VT_DATA + 1), arena_iova(10),
				8192, &dw0), 0);
		fill(want, 100, 1);
		cr_assert_eq(dw0, 100);
		cr_assert_eq(memcmp(mapped, want, 100), 0);
		cr_assert_eq(kv(NKV_KV_RETRIEVE, "dm3", vt_iova(&nv, VT_DATA + 1), arena_iova(10),
				8192, &dw0), 0);
		fill(want, sizes[3], 3);
		cr_assert_eq(memcmp(mapped, want, 4096), 0);
		cr_assert_eq(memcmp(pr.arena + 10 * 4096, want + 4096, 4096), 0);
	}
	/* Short Retrieve: only the buffer's bytes move, the rest untouched. */
	memset(pr.arena + 8 * 4096, 0xab, 4096);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, "dm1", arena_iova(8), 0, 10, &dw0), 0);
	fill(want, 100, 1);
	cr_assert_eq(memcmp(pr.arena + 8 * 4096, want, 10), 0);
	cr_assert_eq(pr.arena[8 * 4096 + 10], 0xab);
	/* List: header and entries, and not a byte past them. */
	memset(pr.arena + 9 * 4096, 0xcd, 4096);
	cr_assert_eq(kv(NKV_KV_LIST, "dm", arena_iova(9), 0, 4096, &dw0), 0);
	memcpy(&cnt, pr.arena + 9 * 4096, 4);
	cr_assert_eq(cnt, 4);
	for (k = 0, i = 4; k < cnt; k++) {
		uint16_t kl;

		memcpy(&kl, pr.arena + 9 * 4096 + i, 2);
		snprintf(key, sizeof(key), "dm%u", k);
		cr_assert_eq(kl, 3);
		cr_assert_eq(memcmp(pr.arena + 9 * 4096 + i + 2, key, 3), 0);
		i += nkv_list_entry_size(kl);
	}
	cr_assert_eq(pr.arena[9 * 4096 + i], 0xcd, "List wrote past its entries");
	cr_assert_eq(kv(NKV_KV_DELETE, "dm0", 0, 0, 0, NULL), 0);
	cr_assert_neq(kv(NKV_KV_EXIST, "dm0", 0, 0, 0, NULL), 0);
	cr_assert(__atomic_load_n(&pr.reads, __ATOMIC_RELAXED) >= 4);
	cr_assert(__atomic_load_n(&pr.writes, __ATOMIC_RELAXED) >= 6);
	cr_assert_eq(__atomic_load_n(&pr.bad, __ATOMIC_RELAXED), 0);
	peer_down();
	free(want);
}

/* The CQE of a Retrieve is posted only after the DMA_WRITE's reply: a
 * client whose copy is slow still finds the value when the CQE shows. */
Test(vfu_dmamsg, completion_never_overtakes_its_data, .init = up, .fini = down)
{
	uint32_t dw0;
	int i;

	peer_up(PEER_OK);
	for (i = 0; i < 3; i++) {
		memset(pr.arena, 0x40 + i, 256);
		cr_assert_eq(kv(NKV_KV_STORE, "slow", arena_iova(0), 0, 256, NULL), 0);
		memset(pr.arena + 4096, 0, 256);
		__atomic_store_n(&pr.mode, PEER_SLOW, __ATOMIC_RELEASE);
		cr_assert_eq(kv(NKV_KV_RETRIEVE, "slow", arena_iova(1), 0, 256, &dw0), 0);
		cr_assert_eq(((volatile uint8_t *)pr.arena)[4096 + 255], 0x40 + i,
			     "CQE seen before its data");
		__atomic_store_n(&pr.mode, PEER_OK, __ATOMIC_RELEASE);
	}
	peer_down();
}

/* A peer that answers badly: the command ends with Data Transfer Error,
 * never success, and a Store stores nothing. */
static void bad_answer(int mode)
{
	uint32_t dw0;
	int st;

	peer_up(PEER_OK);
	memset(pr.arena, 0x11, 64);
	cr_assert_eq(kv(NKV_KV_STORE, "good", arena_iova(0), 0, 64, NULL), 0);
	__atomic_store_n(&pr.mode, mode, __ATOMIC_RELEASE);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, "good", arena_iova(1), 0, 64, &dw0), DTE);
	cr_assert_eq(kv(NKV_KV_STORE, "bad", arena_iova(0), 0, 64, NULL), DTE);
	__atomic_store_n(&pr.mode, PEER_OK, __ATOMIC_RELEASE);
	st = kv(NKV_KV_EXIST, "bad", 0, 0, 0, NULL);
	cr_assert_eq(st, NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS), "status %#x", st);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, "good", arena_iova(1), 0, 64, &dw0), 0);
	cr_assert_eq(pr.arena[4096], 0x11);
	cr_assert_eq(__atomic_load_n(&pr.bad, __ATOMIC_RELAXED), 0);
	peer_down();
}

Test(vfu_dmamsg, error_answer_is_data_transfer_error, .init = up, .fini = down)
{
	bad_answer(PEER_ERROR);
}

Test(vfu_dmamsg, short_answer_is_data_transfer_error, .init = up, .fini = down)
{
	bad_answer(PEER_SHORT);
}

/* A request of the client's own between the target's request and its
 * answer is held and answered after the command, not lost. */
Test(vfu_dmamsg, client_request_during_dma_is_served, .init = up, .fini = down)
{
	uint32_t dw0;
	int i;

	peer_up(PEER_INTERLEAVE);
	memset(pr.arena, 0x22, 64);
	cr_assert_eq(kv(NKV_KV_STORE, "mix", arena_iova(0), 0, 64, NULL), 0);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, "mix", arena_iova(1), 0, 64, &dw0), 0);
	cr_assert_eq(pr.arena[4096 + 63], 0x22);
	for (i = 0; i < 300 && __atomic_load_n(&pr.region_replies, __ATOMIC_RELAXED) < 2; i++)
		usleep(10000);
	cr_assert_eq(__atomic_load_n(&pr.region_replies, __ATOMIC_RELAXED), 2);
	peer_down();
}

/* No answer within the message time limit: Data Transfer Error, the
 * connection dropped; the target serves the next client. */
Test(vfu_dmamsg, silent_client_dropped_target_survives, .init = up, .fini = down)
{
	struct nkv_vfu_server_stats st;
	struct vt_nvme other;
	struct nkv_sqe s;
	uint32_t dw0;

	peer_up(PEER_OK);
	memset(pr.arena, 0x33, 64);
	cr_assert_eq(kv(NKV_KV_STORE, "quiet", arena_iova(0), 0, 64, NULL), 0);
	__atomic_store_n(&pr.mode, PEER_SILENT, __ATOMIC_RELEASE);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, "quiet", arena_iova(1), 0, 64, &dw0), DTE);
	for (int i = 0; i < 300; i++) {
		nkv_vfu_server_stats(srv.srv, &st);
		if (st.dropped)
			break;
		usleep(10000);
	}
	cr_assert_eq(st.dropped, 1);
	peer_down();
	cr_assert_eq(vt_nvme_up(&other, srv.path), 0);
	memcpy(vt_page(&other, VT_DATA), "still here", 10);
	vt_kv_sqe(&s, NKV_KV_RETRIEVE, "quiet", vt_iova(&other, VT_DATA), 4096);
	cr_assert_eq(vt_cmd(&other, 1, &s, &dw0), 0);
	cr_assert_eq(dw0, 64);
	cr_assert_eq(((uint8_t *)vt_page(&other, VT_DATA))[0], 0x33);
	vt_nvme_down(&other);
}
