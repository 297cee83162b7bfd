/* SPDX-License-Identifier: MIT */
/* test_vfu_proto.c - vfio-user protocol level: framing, fd passing, the
 * JSON capability reader, the doorbell forwarder, and hostile messages
 * from a raw socket (each gets an error reply or a clean close, and the
 * server keeps serving others). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "vfio-user/msg.h"
#include "vfu_util.h"

Test(vfu_proto, framing_with_fds_over_socketpair)
{
	struct nkv_vfu_hdr h = { .msg_id = 7, .cmd = NKV_VFU_DMA_MAP };
	struct nkv_vfu_msg m;
	int sv[2], fd = memfd_create("x", 0);
	char pay[40] = "payload";

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_eq(nkv_vfu_send(sv[0], &h, pay, sizeof(pay), &fd, 1), 0);
	cr_assert_eq(nkv_vfu_recv(sv[1], &m, NKV_VFU_MAX_MSG), 0);
	cr_expect_eq(m.hdr.msg_id, 7);
	cr_expect_eq(m.hdr.size, 16 + sizeof(pay));
	cr_expect_eq(m.len, sizeof(pay));
	cr_expect_eq(m.nfds, 1);
	cr_expect_str_eq((char *)m.payload, "payload");
	nkv_vfu_msg_free(&m);
	/* Oversized announcement, then a clean EOF. */
	h.size = 0;
	cr_assert_eq(nkv_vfu_send(sv[0], &h, pay, sizeof(pay), NULL, 0), 0);
	cr_expect_eq(nkv_vfu_recv(sv[1], &m, 32), -EMSGSIZE);
	nkv_vfu_msg_free(&m);
	close(sv[0]);
	close(sv[1]);
	close(fd);
}

Test(vfu_proto, torn_message_and_eof)
{
	struct nkv_vfu_hdr h = { .cmd = 1, .size = 100 };
	struct nkv_vfu_msg m;
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_eq(write(sv[0], &h, sizeof(h)), (ssize_t)sizeof(h));
	close(sv[0]);
	cr_expect_eq(nkv_vfu_recv(sv[1], &m, NKV_VFU_MAX_MSG), -EPROTO);
	nkv_vfu_msg_free(&m);
	cr_expect_eq(nkv_vfu_recv(sv[1], &m, NKV_VFU_MAX_MSG), -ECONNRESET);
	nkv_vfu_msg_free(&m);
	close(sv[1]);
}

Test(vfu_proto, json_capabilities)
{
	const char *j = "{\"capabilities\":{\"max_msg_fds\": 8,\"max_data_xfer_size\":1048576}}";
	uint64_t v = 0;

	cr_expect_eq(nkv_vfu_json_u64(j, strlen(j), "max_msg_fds", &v), 0);
	cr_expect_eq(v, 8);
	cr_expect_eq(nkv_vfu_json_u64(j, strlen(j), "max_data_xfer_size", &v), 0);
	cr_expect_eq(v, 1048576);
	cr_expect_eq(nkv_vfu_json_u64(j, strlen(j), "pgsizes", &v), -ENOENT);
	cr_expect_eq(nkv_vfu_json_u64("{\"a\":x}", 7, "a", &v), -EINVAL);
	cr_expect_eq(nkv_vfu_json_u64("{\"a\":99999999999999999999999}", 29, "a", &v), -EINVAL);
}

/* Forwarder: records what it writes. */
static uint32_t fw_last[16];
static int fw_writes;
static int fw_write(void *arg, uint32_t off, uint32_t val)
{
	(void)arg;
	cr_assert_geq(off, 0x1000);
	fw_last[(off - 0x1000) / 4] = val;
	__atomic_add_fetch(&fw_writes, 1, __ATOMIC_RELAXED);
	return 0;
}

Test(vfu_proto, forwarder_never_loses_the_final_value)
{
	struct nkv_dbfwd_opts o = { .size = sizeof(o) };
	static uint32_t shadow[16];
	struct nkv_dbfwd *f;
	uint32_t i;

	o.shadow = shadow;
	o.len = sizeof(shadow);
	o.write = fw_write;
	cr_assert_eq(nkv_dbfwd_start(&o, &f), 0);
	for (i = 1; i <= 5000; i++) {
		__atomic_store_n(&shadow[2], i % 1024, __ATOMIC_RELEASE);
		__atomic_store_n(&shadow[3], (i * 7) % 1024, __ATOMIC_RELEASE);
	}
	cr_expect_eq(nkv_dbfwd_flush(f), 0);
	cr_expect_eq(fw_last[2], 5000 % 1024);
	cr_expect_eq(fw_last[3], (5000 * 7) % 1024);
	nkv_dbfwd_stop(f);
	cr_expect_gt(fw_writes, 0);
	o.len = 3;
	cr_expect_eq(nkv_dbfwd_start(&o, &f), -EINVAL);
}

/* ---- hostile messages against a live server ---- */
static struct tl_server srv;
static void up(void) { cr_assert_eq(vt_server_start(&srv, 0), 0); }
static void down(void) { tl_server_stop(&srv); }

/* The server (max_conns 4) ends a connection some time after its client
 * closed it: on a loaded machine a test that connects again at once could
 * be refused. Wait for a free slot first. */
static void wait_conn_slot(void)
{
	struct nkv_vfu_server_stats st;
	int i;

	for (i = 0; i < 5000; i++) {
		nkv_vfu_server_stats(srv.srv, &st);
		if (st.conns < 4)
			return;
		usleep(1000);
	}
	cr_assert_fail("the server kept all 4 connection slots for 5 s");
}

static int raw_connect(void)
{
	int fd;

	wait_conn_slot();
	fd = vt_raw_connect(srv.path);

	cr_assert_geq(fd, 0);
	return fd;
}

/* Send a command; returns the reply's errno (0 = success), or -1 when
 * the server closed the connection instead. */
static int raw_cmd(int fd, uint16_t cmd, const void *p, size_t len, const int *fds, int nfds)
{
	struct nkv_vfu_hdr h = { .msg_id = 42, .cmd = cmd };
	struct nkv_vfu_msg m;
	int rc;

	if (nkv_vfu_send(fd, &h, p, len, fds, nfds))
		return -1;
	rc = nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG);
	if (rc) {
		nkv_vfu_msg_free(&m);
		return -1;
	}
	cr_expect_eq(m.hdr.msg_id, 42);
	cr_expect_eq(nkv_vfu_type(m.hdr.flags), NKV_VFU_TYPE_REPLY);
	rc = (m.hdr.flags & NKV_VFU_F_ERROR) ? (int)m.hdr.error : 0;
	nkv_vfu_msg_free(&m);
	return rc;
}

/* The next reply's errno, or -1 when the connection is closed. */
static int raw_reply(int fd)
{
	struct nkv_vfu_msg m;
	int rc = nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG);

	if (!rc)
		rc = (m.hdr.flags & NKV_VFU_F_ERROR) ? (int)m.hdr.error : 0;
	else
		rc = -1;
	nkv_vfu_msg_free(&m);
	return rc;
}

static int raw_negotiated(void)
{
	struct nkv_vfu_version v = { 0, 1 };
	int fd = raw_connect();

	cr_assert_eq(raw_cmd(fd, NKV_VFU_VERSION, &v, sizeof(v), NULL, 0), 0);
	return fd;
}

static void others_still_served(void)
{
	struct vt_nvme n;

	wait_conn_slot();
	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	vt_nvme_down(&n);
}

Test(vfu_proto, malformed_headers_and_sizes, .init = up, .fini = down)
{
	struct nkv_vfu_hdr h = { .cmd = NKV_VFU_VERSION, .size = 8 };
	struct nkv_vfu_version bad = { 9, 0 };
	struct nkv_vfu_region_rw rw = { 0, NKV_VFU_BAR0, 4 };
	char junk[3] = { 1, 2, 3 };
	int fd;

	fd = raw_connect();	/* a short header, then gone */
	cr_assert_eq(write(fd, junk, sizeof(junk)), 3);
	close(fd);
	fd = raw_connect();	/* size below the header: EINVAL, then closed */
	cr_assert_eq(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	cr_expect_eq(raw_reply(fd), EINVAL);
	cr_expect_eq(raw_reply(fd), -1);
	close(fd);
	fd = raw_connect();	/* huge length: E2BIG, then closed */
	h.size = 0x7fffffff;
	cr_assert_eq(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	cr_expect_eq(raw_reply(fd), E2BIG);
	cr_expect_eq(raw_reply(fd), -1);
	close(fd);
	fd = raw_connect();	/* commands before VERSION; a wrong major */
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw), NULL, 0), EINVAL);
	cr_expect_eq(raw_cmd(fd, NKV_VFU_VERSION, &bad, sizeof(bad), NULL, 0), ENOTSUP);
	close(fd);
	fd = raw_negotiated();
	cr_expect_eq(raw_cmd(fd, NKV_VFU_VERSION, &bad, 2, NULL, 0), EINVAL);
	cr_expect_eq(raw_cmd(fd, 99, NULL, 0, NULL, 0), ENOSYS);
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_READ, NULL, 0, NULL, 0), ENOSYS);
	close(fd);
	others_still_served();
}

Test(vfu_proto, bad_regions_offsets_counts, .init = up, .fini = down)
{
	struct nkv_vfu_region_rw rw = { 0, NKV_VFU_BAR0, 4 };
	struct vfio_region_info ri = { .argsz = sizeof(ri), .index = 200 };
	uint8_t wr[16 + 8] = { 0 };
	int fd = raw_negotiated(), mfd = memfd_create("x", 0);

	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw), NULL, 0), 0);
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw) - 1, NULL, 0), EINVAL);
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw), &mfd, 1), EINVAL);
	rw.region = 5;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw), NULL, 0), EINVAL);
	rw.region = 1000;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw), NULL, 0), EINVAL);
	rw.region = NKV_VFU_BAR0;
	rw.offset = 1ull << 40;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw), NULL, 0), EINVAL);
	rw.offset = 2;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw), NULL, 0), EINVAL);
	rw.offset = 0;
	rw.count = 3;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw), NULL, 0), EINVAL);
	rw.count = 0xffffffffu;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw), NULL, 0), EINVAL);
	rw.region = NKV_VFU_CONFIG;
	rw.offset = 250;
	rw.count = 8;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_READ, &rw, sizeof(rw), NULL, 0), EINVAL);
	/* A write whose count disagrees with its payload. */
	rw = (struct nkv_vfu_region_rw){ NKV_REG_CC, NKV_VFU_BAR0, 8 };
	memcpy(wr, &rw, sizeof(rw));
	cr_expect_eq(raw_cmd(fd, NKV_VFU_REGION_WRITE, wr, sizeof(rw) + 4, NULL, 0), EINVAL);
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DEVICE_GET_REGION_INFO, &ri, sizeof(ri), NULL, 0), EINVAL);
	ri.index = 0;
	ri.argsz = 4;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DEVICE_GET_REGION_INFO, &ri, sizeof(ri), NULL, 0), EINVAL);
	close(fd);
	close(mfd);
	others_still_served();
}

Test(vfu_proto, hostile_dma_maps, .init = up, .fini = down)
{
	struct nkv_vfu_dma_map dm = { sizeof(dm), 3, 0, 0x100000, 0x4000 };
	struct nkv_vfu_dma_unmap du = { sizeof(du), 0, 0x100000, 0x4000 };
	int fd = raw_negotiated(), mfd = memfd_create("x", MFD_ALLOW_SEALING), fds[2];

	cr_assert_eq(ftruncate(mfd, 0x4000), 0);
	cr_assert_eq(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	fds[0] = fds[1] = mfd;
	/* No fd: memory reached by DMA_READ/WRITE messages (issue 14). */
	dm.addr = 0x900000;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), NULL, 0), 0);
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), NULL, 0), EEXIST);
	dm.addr = 0x100000;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), fds, 2), EINVAL);
	dm.size = 0x8000;	/* past the memfd's end */
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &mfd, 1), EINVAL);
	dm.size = 0x4000;
	dm.addr = 0x100010;	/* unaligned */
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &mfd, 1), EINVAL);
	dm.addr = 0xfffffffffffff000ull;	/* wraps */
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &mfd, 1), EINVAL);
	dm.addr = 0x100000;
	dm.flags = 0x80;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &mfd, 1), EINVAL);
	dm.flags = 3;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &fd, 1), EBADF);
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &mfd, 1), 0);
	dm.addr = 0x102000;	/* overlaps the first */
	dm.size = 0x2000;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &mfd, 1), EEXIST);
	du.size = 0x2000;	/* partial unmap */
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_UNMAP, &du, sizeof(du), NULL, 0), ENOENT);
	du.size = 0x4000;
	du.flags = NKV_VFU_UNMAP_DIRTY_BITMAP;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_UNMAP, &du, sizeof(du), NULL, 0), ENOTSUP);
	du.flags = 0;
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_UNMAP, &du, sizeof(du), NULL, 0), 0);
	cr_expect_eq(raw_cmd(fd, NKV_VFU_DMA_UNMAP, &du, sizeof(du), NULL, 0), ENOENT);
	close(fd);
	close(mfd);
	others_still_served();
}

Test(vfu_proto, unmap_of_memory_in_use_is_refused, .init = up, .fini = down)
{
	struct vt_nvme n;

	/* The admin and I/O queues live in the mapped memory. */
	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	cr_expect_eq(n.ops->dma_unmap(n.tr, &n.mem), -EBUSY);
	cr_expect_not_null(n.mem.iova, "a refused unmap keeps the registration");
	vt_nvme_down(&n);
}
