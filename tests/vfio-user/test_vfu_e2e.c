/* SPDX-License-Identifier: MIT */
/* test_vfu_e2e.c - our vfio-user client against our server over a real
 * socket: negotiation, regions, registers, DMA maps, the admin queue and
 * KV commands with both doorbell styles, several processes, a client
 * killed mid-batch, a server that goes away, and nkv-probe. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "vfio-user/client.h"
#include "vfio-user/proto.h"
#include "vfu_util.h"

static struct tl_server srv;

static void up_sparse(void) { cr_assert_eq(vt_server_start(&srv, 0), 0); }
static void up_nosparse(void) { cr_assert_eq(vt_server_start(&srv, 1), 0); }
static void down(void) { tl_server_stop(&srv); }

/* Store then retrieve a few keys; 0 when every value came back intact. */
static int kv_flow(struct vt_nvme *n, const char *tag, int count)
{
	int i;

	for (i = 0; i < count; i++) {
		char key[17], val[64];
		struct nkv_sqe s;
		uint32_t dw0 = 0;
		int len;

		snprintf(key, sizeof(key), "%s%02d", tag, i);
		len = snprintf(val, sizeof(val), "value of %s", key);
		memcpy(vt_page(n, VT_DATA), val, (size_t)len);
		vt_kv_sqe(&s, NKV_KV_STORE, key, vt_iova(n, VT_DATA), (uint32_t)len);
		if (vt_cmd(n, 1, &s, NULL))
			return 1;
		memset(vt_page(n, VT_DATA + 1), 0, 128);
		vt_kv_sqe(&s, NKV_KV_RETRIEVE, key, vt_iova(n, VT_DATA + 1), 4096);
		if (vt_cmd(n, 1, &s, &dw0) || dw0 != (uint32_t)len ||
		    memcmp(vt_page(n, VT_DATA + 1), val, (size_t)len))
			return 2;
	}
	return 0;
}

Test(vfu_e2e, negotiation_regions_registers, .init = up_sparse, .fini = down)
{
	const struct nkv_transport_ops *ops = &nkv_transport_vfio_user;
	struct nkv_vfu_client_info in;
	struct nkv_tr *tr;
	uint64_t cap, vs, csts;
	uint8_t cfg[16];
	size_t dblen;
	char err[256];

	cr_assert_eq(ops->open(srv.path, &tr, err, sizeof(err)), 0, "%s", err);
	nkv_vfu_client_info(tr, &in);
	cr_expect_eq(in.major, 0);
	cr_expect_eq(in.minor, 1);
	cr_expect_eq(in.num_regions, 9);
	cr_expect(in.dev_flags & VFIO_DEVICE_FLAGS_PCI);
	cr_expect_eq(in.regions[0].nr_areas, 1);
	cr_expect_eq(in.regions[0].areas[0].offset, 0x1000);
	cr_expect(ops->doorbells(tr, &dblen) != NULL);
	cr_expect_geq(dblen, 64);
	cr_assert_eq(ops->reg_read(tr, NKV_REG_CAP, 8, &cap), 0);
	cr_assert_eq(ops->reg_read(tr, NKV_REG_VS, 4, &vs), 0);
	cr_assert_eq(ops->reg_read(tr, NKV_REG_CSTS, 4, &csts), 0);
	cr_expect_eq(nkv_cap_mqes(cap), 1023);
	cr_expect(nkv_cap_css(cap) & NKV_CAP_CSS_IOCS);
	cr_expect_geq(vs, NKV_VS(1, 4, 0));
	cr_expect_eq(csts & NKV_CSTS_RDY, 0);
	cr_assert_eq(nkv_vfu_client_cfg_read(tr, 0, cfg, sizeof(cfg)), 0);
	cr_expect_eq(cfg[0x0b], 0x01);
	cr_expect_eq(cfg[0x0a], 0x08);
	cr_expect_eq(cfg[0x09], 0x02);
	/* Opening set the function up as a driver does: Bus Master Enable. */
	cr_expect(cfg[NKV_PCI_COMMAND] & NKV_PCI_CMD_MASTER, "PCI Command %#x", cfg[NKV_PCI_COMMAND]);
	cr_expect_eq(ops->alive(tr), 0);
	ops->close(tr);
}

/* A dma-buf of device memory cannot travel to the target process. */
Test(vfu_e2e, dmabuf_memory_refused, .init = up_sparse, .fini = down)
{
	const struct nkv_transport_ops *ops = &nkv_transport_vfio_user;
	struct nkv_dmamem m = { .fd = 0, .len = 4096, .dmabuf = 1 };
	struct nkv_tr *tr;
	char err[256];

	cr_assert_eq(ops->open(srv.path, &tr, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(ops->dma_map(tr, &m), -EOPNOTSUPP);
	cr_expect_null(m.iova);
	ops->close(tr);
}

Test(vfu_e2e, kv_with_sparse_mmap_doorbells, .init = up_sparse, .fini = down)
{
	struct vt_nvme n;
	struct nkv_sqe s = { 0 };
	struct nkv_id_ctrl *id;

	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	cr_assert_null(n.fwd, "doorbells should be mapped, not forwarded");
	s.cdw0 = NKV_ADM_IDENTIFY;
	s.cdw10 = nkv_identify_cdw10(NKV_CNS_CTRL, 0);
	s.prp1 = vt_iova(&n, VT_DATA);
	cr_assert_eq(vt_cmd(&n, 0, &s, NULL), 0);
	id = vt_page(&n, VT_DATA);
	cr_expect_eq(id->vid, 0x1b36);
	cr_expect_eq(kv_flow(&n, "sparse", 8), 0);
	vt_nvme_down(&n);
}

Test(vfu_e2e, kv_through_the_doorbell_forwarder, .init = up_nosparse, .fini = down)
{
	struct vt_nvme n;

	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	cr_assert_not_null(n.fwd, "no sparse mmap: the forwarder must run");
	cr_expect_eq(kv_flow(&n, "fwd", 8), 0);
	cr_expect_gt(nkv_dbfwd_count(n.fwd), 16);
	cr_expect_eq(nkv_dbfwd_error(n.fwd), 0);
	vt_nvme_down(&n);
}

/* Doorbells a cache line apart (CAP.DSTRD 4, nkv-target's default): a
 * client that reads CAP.DSTRD rings them, mapped or forwarded. */
static void stride(struct nkv_vfu_server_opts *o) { o->ctrl.dstrd = NKV_TGT_DSTRD_LINE; }

Test(vfu_e2e, kv_with_doorbells_a_cache_line_apart)
{
	int no_sparse;

	for (no_sparse = 0; no_sparse <= 1; no_sparse++) {
		struct vt_nvme n;

		cr_assert_eq(vt_server_start_with(&srv, no_sparse, stride), 0);
		cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
		cr_expect_eq(n.dstrd, 4);
		cr_expect_eq(kv_flow(&n, no_sparse ? "sfwd" : "smap", 8), 0);
		vt_nvme_down(&n);
		tl_server_stop(&srv);
	}
}

/* --poll-sched idle: the connection's thread, and only it, polls at
 * SCHED_IDLE and serves as before; an unknown class is refused. */
static void idle_sched(struct nkv_vfu_server_opts *o) { o->poll_sched = NKV_VFU_SCHED_IDLE; }

Test(vfu_e2e, connection_thread_at_sched_idle)
{
	struct nkv_vfu_server_opts o = { .size = sizeof(o), .socket_path = "/tmp/nkv-vfu-unused.sock" };
	struct nkv_subsys_opts so = { .size = sizeof(so) };
	struct nkv_vfu_server *bad = NULL;
	struct vt_nvme n;

	o.ss = nkv_subsys_create(&so);
	cr_assert_not_null(o.ss);
	o.poll_sched = NKV_VFU_SCHED_IDLE + 1;
	cr_expect_eq(nkv_vfu_server_start(&o, &bad), -EINVAL);
	cr_expect_null(bad);
	nkv_subsys_destroy(o.ss);

	cr_assert_eq(vt_server_start_with(&srv, 0, idle_sched), 0);
	cr_expect_eq(vt_idle_threads(0), 0);
	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	cr_expect_eq(vt_idle_threads(0), 1);
	cr_expect_eq(kv_flow(&n, "idle", 8), 0);
	vt_nvme_down(&n);
	tl_server_stop(&srv);
}

/* A client that does not seal its memory (QEMU's memory-backend-file,
 * SPDK) is served by default, every command byte for byte, as is one
 * that seals (the fast path). */
Test(vfu_e2e, unsealed_client_every_op, .init = up_sparse, .fini = down)
{
	struct vt_nvme n;
	char why[160] = "";

	cr_assert_eq(vt_nvme_up_mem(&n, srv.path, VT_MEM_UNSEALED), 0, "unsealed memory refused");
	cr_expect_eq(vt_every_op(&n, "uns", why, sizeof(why)), 0, "%s", why);
	vt_nvme_down(&n);
	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	cr_expect_eq(vt_every_op(&n, "sea", why, sizeof(why)), 0, "%s", why);
	vt_nvme_down(&n);
}

static uint16_t pci_command(struct vt_nvme *n)
{
	uint16_t v = 0xffff;

	cr_assert_eq(nkv_vfu_client_cfg_read(n->tr, NKV_PCI_COMMAND, &v, 2), 0);
	return v;
}

static void set_pci_command(struct vt_nvme *n, uint16_t v)
{
	cr_assert_eq(nkv_vfu_client_cfg_write(n->tr, NKV_PCI_COMMAND, &v, 2), 0);
}

static uint32_t csts(struct vt_nvme *n)
{
	uint64_t v = 0;

	cr_assert_eq(n->ops->reg_read(n->tr, NKV_REG_CSTS, 4, &v), 0);
	return (uint32_t)v;
}

/* The Command register keeps exactly the bits a PCIe endpoint with one
 * memory BAR implements, and INTA# is the function's interrupt pin. */
Test(vfu_e2e, pci_command_register_bits, .init = up_sparse, .fini = down)
{
	struct vt_nvme n;
	uint8_t pin = 0;

	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	cr_expect_eq(pci_command(&n), NKV_PCI_CMD_MEMORY | NKV_PCI_CMD_MASTER |
		     NKV_PCI_CMD_INTX_DISABLE, "the client's open set these: %#x", pci_command(&n));
	set_pci_command(&n, 0xffff);
	cr_expect_eq(pci_command(&n), 0x0546, "writable: MSE, BME, PER, SERR, ID; got %#x",
		     pci_command(&n));
	cr_assert_eq(nkv_vfu_client_cfg_read(n.tr, NKV_PCI_INTERRUPT_PIN, &pin, 1), 0);
	cr_expect_eq(pin, 1);
	vt_nvme_down(&n);
}

/* No DMA while Bus Master Enable is clear: the command is not fetched,
 * the controller fails (CFS), nothing lands in memory. */
Test(vfu_e2e, no_dma_without_bus_master, .init = up_sparse, .fini = down)
{
	struct vt_nvme n;
	struct nkv_sqe s;
	uint8_t *page;

	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	cr_assert_eq(kv_flow(&n, "bm", 1), 0);
	set_pci_command(&n, pci_command(&n) & ~NKV_PCI_CMD_MASTER);
	page = vt_page(&n, VT_DATA + 1);
	memset(page, 0xa5, 64);
	vt_kv_sqe(&s, NKV_KV_RETRIEVE, "bm00", vt_iova(&n, VT_DATA + 1), 4096);
	cr_expect_eq(vt_cmd(&n, 1, &s, NULL), -1, "no completion may be posted");
	cr_expect(csts(&n) & NKV_CSTS_CFS, "CSTS %#x", csts(&n));
	cr_expect_eq(page[0], 0xa5, "no data may be written");
	/* Bus master on again does not revive a failed controller (a reset
	 * does, see below); the next connection's controller is unharmed. */
	set_pci_command(&n, pci_command(&n) | NKV_PCI_CMD_MASTER);
	cr_expect(csts(&n) & NKV_CSTS_CFS);
	vt_nvme_down(&n);
	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	cr_expect_eq(csts(&n) & NKV_CSTS_CFS, 0);
	cr_expect_eq(kv_flow(&n, "bm", 2), 0);
	vt_nvme_down(&n);
}

/* A client that leaves Interrupt Disable clear would be waiting for INTx,
 * which vfio-user cannot deliver without an eventfd: CFS, at enable or
 * as soon as the bit is cleared on an enabled controller. */
Test(vfu_e2e, intx_expected_fails_the_controller, .init = up_sparse, .fini = down)
{
	struct vt_nvme n;

	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	cr_expect_eq(csts(&n), NKV_CSTS_RDY);
	set_pci_command(&n, pci_command(&n) & ~NKV_PCI_CMD_INTX_DISABLE);
	cr_expect_eq(csts(&n), NKV_CSTS_RDY | NKV_CSTS_CFS, "CSTS %#x", csts(&n));
	/* Disable clears CFS; enabling again with the bit still clear fails
	 * again, at once. */
	cr_assert_eq(n.ops->reg_write(n.tr, NKV_REG_CC, 0, 4), 0);
	cr_expect_eq(csts(&n), 0);
	cr_assert_eq(n.ops->reg_write(n.tr, NKV_REG_CC, 1u | NKV_CC_CSS_IOCS << NKV_CC_CSS_SHIFT |
				      6u << NKV_CC_IOSQES_SHIFT | 4u << NKV_CC_IOCQES_SHIFT, 4), 0);
	cr_expect_eq(csts(&n), NKV_CSTS_RDY | NKV_CSTS_CFS, "CSTS %#x", csts(&n));
	vt_nvme_down(&n);
}

static int wait_child(pid_t pid, int ms)
{
	int st, i;

	for (i = 0; i < ms; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static pid_t spawn_client(const char *tag, int kill_mid_batch)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct vt_nvme n;
		int i;

		if (vt_nvme_up(&n, srv.path))
			_exit(10);
		if (kill_mid_batch) {
			/* Submit a batch and die without waiting for it. */
			for (i = 0; i < 16; i++) {
				struct nkv_sqe s;
				char key[17];

				snprintf(key, sizeof(key), "dead%02d", i);
				vt_kv_sqe(&s, NKV_KV_STORE, key, vt_iova(&n, VT_DATA), 4096);
				vt_submit(&n, 1, &s);
			}
			raise(SIGKILL);
		}
		_exit(kv_flow(&n, tag, 16));
	}
	return pid;
}

Test(vfu_e2e, two_client_processes_at_once, .init = up_sparse, .fini = down)
{
	pid_t a = spawn_client("procA", 0), b = spawn_client("procB", 0);

	cr_expect_eq(wait_child(a, 20000), 0);
	cr_expect_eq(wait_child(b, 20000), 0);
}

Test(vfu_e2e, client_killed_mid_batch_is_cleaned_up, .init = up_sparse, .fini = down)
{
	struct nkv_vfu_server_stats st;
	struct vt_nvme n;
	pid_t victim;
	int i;

	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	victim = spawn_client("x", 1);
	cr_expect_eq(wait_child(victim, 20000), 128 + SIGKILL);
	cr_expect_eq(kv_flow(&n, "survivor", 8), 0);
	for (i = 0; i < 3000; i++) {
		nkv_vfu_server_stats(srv.srv, &st);
		if (st.closed >= 1)
			break;
		usleep(1000);
	}
	cr_expect_eq(st.closed, 1, "the dead client's controller must be freed");
	cr_expect_eq(st.conns, 1);
	cr_expect_eq(kv_flow(&n, "after", 4), 0);
	vt_nvme_down(&n);
}

Test(vfu_e2e, server_gone_gives_bounded_errors)
{
	const struct nkv_transport_ops *ops = &nkv_transport_vfio_user;
	struct nkv_tr *tr;
	uint64_t v;
	char err[256];
	int rc;

	cr_assert_eq(vt_server_start(&srv, 0), 0);
	cr_assert_eq(ops->open(srv.path, &tr, err, sizeof(err)), 0, "%s", err);
	tl_server_stop(&srv);
	rc = ops->reg_read(tr, NKV_REG_CAP, 8, &v);
	cr_expect_lt(rc, 0);
	cr_expect_lt(ops->alive(tr), 0);
	cr_expect_eq(ops->reg_read(tr, NKV_REG_CAP, 8, &v), -ENOTCONN);
	cr_expect_neq(nkv_vfu_client_last_error(tr)[0], '\0');
	ops->close(tr);
	rc = ops->open(srv.path, &tr, err, sizeof(err));
	cr_expect(rc == -ENOENT || rc == -ECONNREFUSED, "rc %d", rc);
	cr_expect(strstr(err, "cannot connect") != NULL, "%s", err);
}

Test(vfu_e2e, nkv_probe_prints_device_regions_registers, .init = up_nosparse, .fini = down)
{
	char exe[512], cmd[1200], out[8192];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t got;
	FILE *p;

	cr_assert_gt(n, 0);
	exe[n] = 0;
	*strrchr(exe, '/') = 0;	/* .../tests */
	snprintf(cmd, sizeof(cmd), "timeout 20 %s/../bin/nkv-probe vfio-user:%s 2>&1", exe, srv.path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	got = fread(out, 1, sizeof(out) - 1, p);
	out[got] = 0;
	cr_expect_eq(pclose(p), 0, "%s", out);
	cr_expect(strstr(out, "class=0x010802 (NVMe)"), "%s", out);
	cr_expect(strstr(out, "region 0 BAR0"), "%s", out);
	cr_expect(strstr(out, "REGION_WRITE messages"), "%s", out);
	cr_expect(strstr(out, "MQES=1023"), "%s", out);
	cr_expect(strstr(out, "RDY=0"), "%s", out);
}
