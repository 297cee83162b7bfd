/* SPDX-License-Identifier: MIT */
/*
 * The host library's GPU runtime seam, without a GPU: the memory-mode
 * table of docs/gpu.md for every mode, transport and platform, and queue
 * pairs for device code (nkv_qpair_create_dev) on the emulated runtime,
 * driven by the wave KV kernel on the cpu engine exactly as a GPU would
 * drive them: bookkeeping in "device memory", the host's descriptor
 * untouched, device-kept counters, the synchronous API refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "device/wave_kernels.h"
#include "host/gpu.h"
#include "host_util.h"
#include "nkv_cpu.h"

static const struct nkv_gpu_caps nvidia = { "cuda", 0, 0, 1 };
static const struct nkv_gpu_caps nvidia_no_export = { "cuda", 0, 0, 0 };
static const struct nkv_gpu_caps amd = { "hip", 0, 1, 0 };
static const struct nkv_gpu_caps none = { "emulated", 1, 1, 0 };

/* What the table says for @mode: the rings and the doorbell shadow are
 * refused on a real GPU; values (0x8) are honoured over vfio-user when
 * they go by messages, over pcie where the runtime exports a dma-buf. */
static int want(const struct nkv_gpu_caps *c, int pcie, uint32_t mode, uint32_t flags)
{
	if (mode & (NKV_MEM_SQ | NKV_MEM_CQ | NKV_MEM_DB))
		return -EOPNOTSUPP;
	if (!(mode & NKV_MEM_DATA))
		return 0;
	if (pcie)
		return c->dmabuf_export ? 0 : -EOPNOTSUPP;
	return flags & NKV_CTRL_VALUES_BY_MESSAGES ? 0 : -EOPNOTSUPP;
}

/* Every mode, transport, platform and values-by-messages choice against
 * the rule above, each refusal naming platform and transport; nothing
 * refused without a GPU (the arena); bits past 0xf invalid. */
Test(host_gpu, memory_mode_table)
{
	const char *tr[2] = { "vfio-user", "pcie" };
	const struct nkv_gpu_caps *caps[3] = { &nvidia, &nvidia_no_export, &amd };
	char why[256];
	uint32_t mode, f;
	int t, p;

	for (t = 0; t < 2; t++) {
		for (f = 0; f <= NKV_CTRL_VALUES_BY_MESSAGES; f++)
			for (mode = 0; mode <= 0xf; mode++) {
				cr_expect_eq(nkv_h_gpu_mode_check(&none, tr[t], mode, f, why,
								  sizeof(why)), 0);
				for (p = 0; p < 3; p++) {
					int rc = nkv_h_gpu_mode_check(caps[p], tr[t], mode, f, why,
								      sizeof(why));

					cr_expect_eq(rc, want(caps[p], t, mode, f), "%s %s %#x flags %u",
						     caps[p]->name, tr[t], mode, f);
					if (rc)
						cr_expect(strstr(why, caps[p]->name) &&
							  strstr(why, tr[t]),
							  "names platform and transport: %s", why);
				}
			}
		cr_expect_eq(nkv_h_gpu_mode_check(&nvidia, tr[t], 0x10, 0, why, sizeof(why)), -EINVAL);
	}
	/* The reasons a user can act on. */
	nkv_h_gpu_mode_check(&nvidia, "vfio-user", NKV_MEM_DATA, 0, why, sizeof(why));
	cr_expect(strstr(why, "DMA messages") && strstr(why, "NKV_CTRL_VALUES_BY_MESSAGES"), "%s",
		  why);
	/* Over pcie the import exists; what can be missing is the export. */
	nkv_h_gpu_mode_check(&nvidia_no_export, "pcie", NKV_MEM_DATA, 0, why, sizeof(why));
	cr_expect(strstr(why, "import a dma-buf") && strstr(why, "cuMemGetHandleForAddressRange"),
		  "%s", why);
	nkv_h_gpu_mode_check(&amd, "pcie", NKV_MEM_DATA, 0, why, sizeof(why));
	cr_expect(strstr(why, "import a dma-buf") && strstr(why, "hsa_amd_portable_export_dmabuf"),
		  "%s", why);
	nkv_h_gpu_mode_check(&amd, "pcie", NKV_MEM_SQ, 0, why, sizeof(why));
	cr_expect(strstr(why, "no ring there yet") != NULL, "%s", why);
	nkv_h_gpu_mode_check(&nvidia, "vfio-user", NKV_MEM_DB, 0, why, sizeof(why));
	cr_expect(strstr(why, "no CPU mapping") != NULL, "%s", why);
	nkv_h_gpu_mode_check(&amd, "vfio-user", NKV_MEM_DB, 0, why, sizeof(why));
	cr_expect(strstr(why, "large BAR") != NULL, "%s", why);
	nkv_h_gpu_mode_check(&nvidia, "vfio-user", NKV_MEM_CQ, 0, why, sizeof(why));
	cr_expect(strstr(why, "another process") != NULL, "%s", why);
}

#define KEYS 24u

struct kernel_run {
	struct nkv_dev_qp *qp;
	struct nkv_wk_args a;
};

static void kernel(void *arg)
{
	struct kernel_run *k = arg;

	nkv_wk_kv_batch(k->qp, &k->a);
}

/* One wave runs the wave KV kernel over all keys with opcode opc. */
static void run_op(struct nkv_dev_qp *qp, struct nkv_wk_key *keys, struct nkv_wk_out *out,
		   uint32_t opc)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 1, 32, 0 };
	struct kernel_run k = { qp, { 0 } };

	memset(out, 0xff, KEYS * sizeof(*out));
	k.a.keys_addr = (uintptr_t)keys;
	k.a.out_addr = (uintptr_t)out;
	k.a.count = KEYS;
	k.a.opc = opc;	/* nsid 0: the descriptor's */
	k.a.value_size = 512;
	cr_assert_eq(nkv_cpu_launch(&cfg, kernel, &k), 0);
}

static void device_qpair(uint32_t mode)
{
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .depth = 64, .slots = KEYS,
				     .slot_size = 4096 };
	struct nkv_wk_key keys[KEYS];
	struct nkv_wk_out out[KEYS];
	struct nkv_qpair_stats st;
	struct nkv_qpair_info qi = { .size = sizeof(qi) };
	struct nkv_ctrl_info ci;
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct nkv_dev_qp *dq;
	struct nkv_result r;
	char err[256] = "";
	uint32_t i, len;

	cr_assert_eq(ht_server_start(&s, NULL), 0);
	cr_assert_eq(ht_connect(&s, mode, 1, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_ctrl_get_info(c, &ci), 0);
	cr_expect_str_eq(ci.gpu, "emulated");
	cr_expect_eq(ci.gpu_error, 0);
	cr_assert_eq(nkv_qpair_create_dev(c, &qo, &q, &dq), 0);
	cr_assert_eq(nkv_qpair_get_info(q, &qi), 0);
	cr_expect_eq(qi.device, 1);
	cr_expect_eq(qi.memory_mode, mode);
	cr_expect_eq(qi.bookkeeping, NKV_PLACE_EMULATED, "device memory, emulated");
	cr_expect_eq(qi.values, mode & NKV_MEM_DATA ? NKV_PLACE_EMULATED : NKV_PLACE_HOST);
	cr_expect_eq((void *)nkv_qpair_dev(q), (void *)dq, "one descriptor, one address");
	cr_expect_neq((void *)dq, NULL);
	/* The synchronous API is for host queue pairs. */
	cr_expect_eq(nkv_exist(q, "k", 1, &r), -EOPNOTSUPP);
	for (i = 0; i < KEYS; i++) {
		uint8_t *v = nkv_qpair_slot(q, i, &len);

		cr_assert(v && len == 4096);
		memset(v, (int)(i + 1), 512);
		keys[i].len = (uint32_t)snprintf((char *)keys[i].key, NKV_KEY_INLINE_MAX, "gpu%02u", i);
	}
	run_op(dq, keys, out, NKV_KV_STORE);
	for (i = 0; i < KEYS; i++) {
		cr_expect_eq(out[i].err, 0, "key %u: %d", i, out[i].err);
		cr_expect_eq(out[i].status, 0, "key %u", i);
		memset(nkv_qpair_slot(q, i, NULL), 0, 512);
	}
	run_op(dq, keys, out, NKV_KV_RETRIEVE);
	for (i = 0; i < KEYS; i++) {
		const uint8_t *v = nkv_qpair_slot(q, i, NULL);

		cr_expect_eq(out[i].status, 0, "key %u", i);
		cr_expect_eq(out[i].dw0, 512, "key %u: stored length", i);
		cr_expect(v[0] == (uint8_t)(i + 1) && v[511] == (uint8_t)(i + 1), "key %u bytes", i);
	}
	run_op(dq, keys, out, NKV_KV_DELETE);
	run_op(dq, keys, out, NKV_KV_EXIST);
	for (i = 0; i < KEYS; i++)
		cr_expect_eq(out[i].status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS), "key %u", i);
	/* Device code counted its own commands and doorbells: one SQ
	 * doorbell per 24-key batch, four batches. */
	cr_assert_eq(nkv_qpair_get_stats(q, &st), 0);
	cr_expect_eq(st.dev_commands, 4 * KEYS);
	cr_expect_eq(st.dev_sq_doorbells, 4);
	cr_expect_eq(st.commands, 0, "the synchronous API ran nothing");
	cr_expect_eq(nkv_qpair_failed(q), 0);
	/* The host's own copy of the descriptor never moved. */
	cr_expect_eq(nkv_qpair_reset(q), 0);
	cr_assert_eq(nkv_qpair_get_stats(q, &st), 0);
	cr_expect_eq(st.dev_commands, 0, "reset cleared the device copy");
	run_op(dq, keys, out, NKV_KV_EXIST);
	cr_expect_eq(out[0].status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}

Test(host_gpu, device_queue_pair_mode_0) { device_qpair(0); }
Test(host_gpu, device_queue_pair_mode_f) { device_qpair(0xf); }

Test(host_gpu, bad_flags_refused)
{
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .flags = 0x80 };
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;

	cr_assert_eq(ht_server_start(&s, NULL), 0);
	cr_assert_eq(ht_connect(&s, 0, 1, &c, NULL, 0), 0);
	cr_expect_eq(nkv_qpair_create(c, &qo, &q), -EINVAL);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}

/* Placement comes with the queue pair: a controller connected with mode
 * 0 gives one queue pair its values in device memory and another none;
 * the doorbell bit stays the controller's. Values still move both ways. */
Test(host_gpu, queue_pair_memory_mode)
{
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .depth = 8, .slots = 4,
				     .memory_mode = NKV_MEM_DATA };
	struct nkv_qpair_info qi = { .size = sizeof(qi) };
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q, *h, *bad;
	struct nkv_result r;
	char v[64];

	cr_assert_eq(ht_server_start(&s, NULL), 0);
	cr_assert_eq(ht_connect(&s, 0, 3, &c, NULL, 0), 0);
	cr_assert_eq(nkv_qpair_create(c, &qo, &q), 0);
	cr_assert_eq(nkv_qpair_get_info(q, &qi), 0);
	cr_expect_eq(qi.memory_mode, NKV_MEM_DATA);
	cr_expect_eq(qi.values, NKV_PLACE_EMULATED, "values in the device arena");
	cr_expect_eq(qi.sq, NKV_PLACE_HOST);
	cr_expect_eq(qi.device, 0);
	qo.memory_mode = 0;
	cr_assert_eq(nkv_qpair_create(c, &qo, &h), 0);
	cr_assert_eq(nkv_qpair_get_info(h, &qi), 0);
	cr_expect_eq(qi.values, NKV_PLACE_HOST, "the other queue pair keeps host RAM");
	qo.memory_mode = NKV_MEM_DB;
	cr_expect_eq(nkv_qpair_create(c, &qo, &bad), -EINVAL, "doorbells are the controller's");
	cr_assert_eq(nkv_store(q, "pm", 2, "placed", 6, 0, &r), 0);
	cr_expect_eq(r.status, 0);
	cr_assert_eq(nkv_retrieve(h, "pm", 2, v, sizeof(v), &r), 0);
	cr_expect_eq(r.dw0, 6);
	cr_expect_arr_eq(v, "placed", 6);
	nkv_qpair_destroy(h);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}

/* The library's messages reach the application's log callback, not
 * stderr: here, why the synchronous API refused a device queue pair. */
static char logged[512];

static void log_to_buf(void *ctx, const char *line)
{
	(void)ctx;
	snprintf(logged, sizeof(logged), "%s", line);
}

Test(host_gpu, log_callback_gets_the_refusal)
{
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct nkv_dev_qp *dq;
	struct nkv_result r;

	cr_assert_eq(ht_server_start(&s, NULL), 0);
	cr_assert_eq(ht_connect(&s, 0, 1, &c, NULL, 0), 0);
	cr_assert_eq(nkv_qpair_create_dev(c, NULL, &q, &dq), 0);
	logged[0] = 0;
	nkv_set_log(log_to_buf, NULL);
	cr_expect_eq(nkv_exist(q, "k", 1, &r), -EOPNOTSUPP);
	nkv_set_log(NULL, NULL);
	cr_expect(strstr(logged, "nkv_qpair_create_dev") != NULL, "logged: '%s'", logged);
	cr_expect_eq(nkv_qpair_create_dev(c, NULL, &q, NULL), -EINVAL, "no place for the descriptor");
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}
