/* SPDX-License-Identifier: MIT */
/*
 * Exec (83h) end to end over vfio-user: nkv_exec() against an in-process
 * nkv-target (mem backend), modules stored in the namespace like any
 * value and allowlisted by SHA-256 (exec.h, as exec_allow does). Every
 * status (not allowlisted, digest mismatch, budget exceeded, module
 * error, no such key), an endless loop, a memory hog, a huge output, the
 * forbidden things a module may try, a concurrent Store, a read-only
 * namespace, truncation and the advertised capability.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host_util.h"
#include "mods.h"
#include "nkv_dev.h"
#include "target/core/core.h"
#include "target/exec/exec.h"

#define ST_NOT_ALLOWED NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_EXEC_NOT_ALLOWED)
#define ST_DIGEST NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_EXEC_DIGEST)
#define ST_BUDGET NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_EXEC_BUDGET)
#define ST_MODULE NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_EXEC_MODULE)
#define ST_NO_KEY NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS)

static struct tl_server srv;
static struct nkv_ctrl *ctrl;
static struct nkv_qpair *qp;

/* A TP rank's slice: input "OFFSET LEN" (decimal), the bytes back. */
static const char slice_mod[] =
	"return function(value, input)\n"
	"  local off, len = input:match('^(%d+) (%d+)$')\n"
	"  off, len = tonumber(off), tonumber(len)\n"
	"  return value:sub(off + 1, off + len)\n"
	"end\n";

static void setup(void)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 16, .slot_size = 4096 };
	char err[256] = "";

	nkv_exec_clear();
	nkv_exec_cache_clear();
	cr_assert_eq(ht_server_start(&srv, NULL), 0);
	cr_assert_eq(ht_connect(&srv, 0, 2, &ctrl, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(ctrl, &o, &qp), 0);
}

static void teardown(void)
{
	nkv_qpair_destroy(qp);
	qp = NULL;
	nkv_ctrl_close(ctrl);
	tl_server_stop(&srv);
	nkv_exec_clear();
}

static void put(const char *key, const void *v, uint32_t len)
{
	struct nkv_result r;

	cr_assert_eq(nkv_store(qp, key, (uint32_t)strlen(key), v, len, 0, &r), 0);
	cr_assert_eq(r.status, 0, "store %s: %#x", key, r.status);
}

/* Store module src under key and allowlist it as op_id with caps. */
static void module(const char *key, const char *src, uint32_t op_id,
		   const struct nkv_exec_caps *caps)
{
	struct nkv_exec_entry e = { .nsid = 1, .op_id = op_id };

	put(key, src, (uint32_t)strlen(src));
	nkv_exec_sha256(src, strlen(src), e.digest);
	e.klen = (uint32_t)strlen(key);
	memcpy(e.key, key, e.klen);
	if (caps)
		e.caps = *caps;
	cr_assert_eq(nkv_exec_allow(&e), 0);
}

static int run(uint32_t op_id, const char *key, const char *in, void *out, uint32_t ocap,
	       uint32_t *olen)
{
	return nkv_exec(qp, key, (uint32_t)strlen(key), op_id, in, in ? (uint32_t)strlen(in) : 0,
			out, ocap, olen);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

TestSuite(exec, .init = setup, .fini = teardown, .timeout = 60);

Test(exec, advertised)
{
	struct nkv_ns_ext e = { .size = sizeof(e) };

	cr_assert_eq(nkv_ctrl_ns_ext(ctrl, 1, &e), 0);
	cr_assert(e.advertised);
	cr_assert_eq(e.exec, 1, "the KV Identify Namespace's vendor bytes offer Exec");
}

/* A rank's eighth of a block, byte-checked against a Retrieve's. */
Test(exec, slice_matches_retrieve)
{
	uint32_t len = 1u << 20, part = len / 8, olen = 0, rank;
	uint8_t *val = malloc(len), *whole = malloc(len), *out = malloc(part);
	struct nkv_result r;
	char in[64];

	ht_fill(val, len, 49);
	put("block0", val, len);
	module("mod.slice", slice_mod, 7, NULL);
	cr_assert_eq(nkv_retrieve(qp, "block0", 6, whole, len, &r), 0);
	cr_assert_eq(r.status, 0);
	for (rank = 0; rank < 8; rank++) {
		snprintf(in, sizeof(in), "%u %u", rank * part, part);
		cr_assert_eq(run(7, "block0", in, out, part, &olen), 0, "rank %u", rank);
		cr_assert_eq(olen, part);
		cr_assert_eq(memcmp(out, whole + rank * part, part), 0, "rank %u's bytes", rank);
	}
	free(val);
	free(whole);
	free(out);
}

/* Rank 5's slice of a 1 MiB block through @q, against the bytes stored. */
static void slice_via(struct nkv_qpair *q, const uint8_t *val, uint32_t len)
{
	uint32_t part = len / 8, olen = 0;
	uint8_t *out = malloc(part);
	char in[64];

	snprintf(in, sizeof(in), "%u %u", 5 * part, part);
	cr_assert_eq(nkv_exec(q, "block0", 6, 7, in, (uint32_t)strlen(in), out, part, &olen), 0);
	cr_assert_eq(olen, part);
	cr_assert_eq(memcmp(out, val + 5 * part, part), 0);
	free(out);
}

/* The buffer both ways by PRPs (the default queue pair sends SGL1: the
 * target offers SGLs), and in memory the target reaches only by DMA
 * messages (values in the device arena, NKV_CTRL_VALUES_BY_MESSAGES):
 * the input brought in, the output sent back. */
Test(exec, prps_and_values_by_messages)
{
	struct nkv_qpair_opts po = { .size = sizeof(po), .depth = 16, .slot_size = 4096,
				     .flags = NKV_QPAIR_PRP_ONLY };
	struct nkv_ctrl_opts co = { .size = sizeof(co), .memory_mode = NKV_MEM_DATA,
				    .flags = NKV_CTRL_VALUES_BY_MESSAGES, .io_queues = 1 };
	uint32_t len = 1u << 20;
	uint8_t *val = malloc(len);
	struct nkv_qpair *q, *mq;
	struct nkv_ctrl *mc;

	ht_fill(val, len, 77);
	put("block0", val, len);
	module("mod.slice", slice_mod, 7, NULL);
	cr_assert_eq(nkv_qpair_create(ctrl, &po, &q), 0);
	slice_via(q, val, len);
	nkv_qpair_destroy(q);
	cr_assert_eq(nkv_ctrl_connect(srv.uri, &co, &mc), 0);
	cr_assert_eq(nkv_qpair_create(mc, NULL, &mq), 0);
	slice_via(mq, val, len);
	nkv_qpair_destroy(mq);
	nkv_ctrl_close(mc);
	free(val);
}

Test(exec, not_allowlisted)
{
	uint32_t olen = 1;
	char out[8];

	put("v", "abc", 3);
	module("mod.slice", slice_mod, 7, NULL);
	cr_assert_eq(run(8, "v", "0 1", out, sizeof(out), &olen), ST_NOT_ALLOWED);
	cr_assert_eq(olen, 0);
	cr_assert_eq(nkv_exec_deny(1, 7), 0);
	cr_assert_eq(run(7, "v", "0 1", out, sizeof(out), &olen), ST_NOT_ALLOWED, "denied again");
}

Test(exec, digest_mismatch)
{
	struct nkv_exec_entry e = { .nsid = 1, .op_id = 3, .klen = 5 };
	uint32_t olen;
	char out[8];

	put("v", "abc", 3);
	module("mod.slice", slice_mod, 7, NULL);
	/* The bytes under the key are not the allowlisted ones. */
	memcpy(e.key, "mod.x", 5);
	put("mod.x", "return function() return 'evil' end", 36);
	nkv_exec_sha256(slice_mod, strlen(slice_mod), e.digest);
	cr_assert_eq(nkv_exec_allow(&e), 0);
	cr_assert_eq(run(3, "v", "0 1", out, sizeof(out), &olen), ST_DIGEST);
	/* No module stored under the key at all. */
	memcpy(e.key, "mod.y", 5);
	cr_assert_eq(nkv_exec_allow(&e), 0);
	cr_assert_eq(run(3, "v", "0 1", out, sizeof(out), &olen), ST_DIGEST);
}

Test(exec, no_such_value)
{
	uint32_t olen;
	char out[8];

	module("mod.slice", slice_mod, 7, NULL);
	cr_assert_eq(run(7, "absent", "0 1", out, sizeof(out), &olen), ST_NO_KEY);
}

Test(exec, endless_loop_ends_within_twice_its_wall_cap)
{
	struct nkv_exec_caps c = { .max_instructions = UINT64_MAX >> 2, .max_wall_ms = 300 };
	uint32_t olen;
	uint64_t t0;
	char out[8];

	put("v", "abc", 3);
	/* pcall cannot keep it alive: the hook raises on every instruction. */
	module("mod.loop", "return function() while true do pcall(function() while true do end "
			   "end) end end", 9, &c);
	t0 = now_ms();
	cr_assert_eq(run(9, "v", NULL, out, sizeof(out), &olen), ST_BUDGET);
	cr_assert_lt(now_ms() - t0, 2 * 300, "ended after %llu ms",
		     (unsigned long long)(now_ms() - t0));
}

Test(exec, instruction_budget)
{
	struct nkv_exec_caps c = { .max_instructions = 100000, .max_wall_ms = 10000 };
	uint32_t olen;
	char out[8];

	put("v", "abc", 3);
	module("mod.count", "return function() local n = 0 while true do n = n + 1 end end", 4, &c);
	cr_assert_eq(run(4, "v", NULL, out, sizeof(out), &olen), ST_BUDGET);
}

Test(exec, memory_hog)
{
	struct nkv_exec_caps c = { .max_memory = 4u << 20 };
	uint32_t olen;
	char out[8];

	put("v", "abc", 3);
	module("mod.hog", "return function() local t = {} for i = 1, 1e9 do "
			  "t[i] = string.rep('x', 4096) .. i end end", 5, &c);
	cr_assert_eq(run(5, "v", NULL, out, sizeof(out), &olen), ST_BUDGET);
}

Test(exec, huge_output)
{
	struct nkv_exec_caps small = { .max_output = 1000 };
	uint32_t olen = 0, i;
	char out[100];

	put("v", "abc", 3);
	module("mod.big", "return function() return string.rep('y', 1 << 20) end", 6, &small);
	cr_assert_eq(run(6, "v", NULL, out, sizeof(out), &olen), ST_BUDGET, "past max_output");
	/* Within max_output but past the caller's cap: truncated, not failed. */
	module("mod.big", "return function() return string.rep('y', 1 << 20) end", 6, NULL);
	cr_assert_eq(run(6, "v", NULL, out, sizeof(out), &olen), 0);
	cr_assert_eq(olen, 1u << 20, "DW0 is the true length");
	for (i = 0; i < sizeof(out); i++)
		cr_assert_eq(out[i], 'y');
}

Test(exec, module_errors)
{
	uint32_t olen;
	char out[8];

	put("v", "abc", 3);
	module("mod.err", "return function() error('boom') end", 1, NULL);
	cr_assert_eq(run(1, "v", NULL, out, sizeof(out), &olen), ST_MODULE);
	module("mod.syntax", "return function( end", 2, NULL);
	cr_assert_eq(run(2, "v", NULL, out, sizeof(out), &olen), ST_MODULE);
	module("mod.nofn", "return 42", 3, NULL);
	cr_assert_eq(run(3, "v", NULL, out, sizeof(out), &olen), ST_MODULE);
	module("mod.bad_ret", "return function() return {} end", 4, NULL);
	cr_assert_eq(run(4, "v", NULL, out, sizeof(out), &olen), ST_MODULE);
	/* A module stored as bytecode: text chunks only. */
	module("mod.bin", "\x1bLuaS\x00junk", 5, NULL);
	cr_assert_eq(run(5, "v", NULL, out, sizeof(out), &olen), ST_MODULE);
}

/* Each forbidden thing tried; the module names any that worked. */
Test(exec, forbidden_things_refused)
{
	static const char mod[] =
		"return function(value, input)\n"
		"  local got = {}\n"
		"  local function no(name, ok) if ok then got[#got + 1] = name end end\n"
		"  no('io', io ~= nil) no('os', os ~= nil) no('require', require ~= nil)\n"
		"  no('package', package ~= nil) no('debug', debug ~= nil)\n"
		"  no('dofile', dofile ~= nil) no('loadfile', loadfile ~= nil)\n"
		"  no('string.dump', string.dump ~= nil) no('collectgarbage', collectgarbage ~= nil)\n"
		"  no('print', print ~= nil) no('coroutine', coroutine ~= nil)\n"
		"  no('str:dump', ('').dump ~= nil)\n"
		"  no('load bytecode', load('\\27LuaS\\0') ~= nil)\n"
		"  no('load text', load('return 1') == nil)\n"
		"  no('value write', pcall(function() value.x = 1 end))\n"
		"  no('value metatable', getmetatable(value) ~= false)\n"
		"  no('value len', value:len() ~= 3 or #value ~= 3)\n"
		"  return table.concat(got, ',')\n"
		"end\n";
	uint32_t olen = 99;
	char out[256] = "";

	put("v", "abc", 3);
	module("mod.forbidden", mod, 11, NULL);
	struct nkv_result r;
	char v[8];

	cr_assert_eq(run(11, "v", NULL, out, sizeof(out) - 1, &olen), 0);
	out[olen < sizeof(out) ? olen : sizeof(out) - 1] = 0;
	cr_assert_eq(olen, 0, "allowed: %s", out);
	cr_assert_eq(nkv_retrieve(qp, "v", 1, v, sizeof(v), &r), 0);
	cr_assert(r.status == 0 && r.dw0 == 3 && !memcmp(v, "abc", 3), "the value unmodified");
}

struct storer {
	struct nkv_qpair *q;
	int stop;
	unsigned stores;
};

static void *store_loop(void *arg)
{
	struct storer *s = arg;
	uint32_t la = 256u << 10, lb = 512u << 10;
	uint8_t *a = malloc(la), *b = malloc(lb);
	struct nkv_result r;

	memset(a, 'a', la);
	memset(b, 'b', lb);
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		int odd = s->stores++ & 1;

		if (nkv_store(s->q, "hot", 3, odd ? b : a, odd ? lb : la, 0, &r) || r.status)
			break;
	}
	free(a);
	free(b);
	return NULL;
}

/* The module sees one whole value, old or new, never a mix. */
Test(exec, concurrent_store_sees_whole_values)
{
	static const char mod[] = EXEC_WHOLE_MOD;
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 16, .slot_size = 4096 };
	struct storer s = { 0 };
	pthread_t t;
	char out[64];
	uint32_t olen;
	int i;

	put("hot", "a", 1);
	module("mod.whole", mod, 12, NULL);
	cr_assert_eq(nkv_qpair_create(ctrl, &o, &s.q), 0);
	cr_assert_eq(pthread_create(&t, NULL, store_loop, &s), 0);
	for (i = 0; i < 40; i++) {
		cr_assert_eq(run(12, "hot", NULL, out, sizeof(out) - 1, &olen), 0);
		out[olen] = 0;
		cr_assert(!strcmp(out, "a1") || !strcmp(out, "a262144") || !strcmp(out, "b524288"),
			  "call %d saw %s", i, out);
	}
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	cr_assert_gt(s.stores, 0);
	nkv_qpair_destroy(s.q);
}

/* Exec never writes, so a read-only namespace serves it. */
Test(exec, read_only_namespace)
{
	struct nkv_subsys *ss = nkv_tgt_embed_ss(srv.tgt);
	struct nkv_result r;
	uint32_t olen;
	char out[8];

	put("v", "abcdef", 6);
	module("mod.slice", slice_mod, 7, NULL);
	__atomic_store_n(&ss->ns[1]->read_only, 1, __ATOMIC_RELEASE);	/* as namespace_set */
	cr_assert_eq(nkv_store(qp, "v", 1, "x", 1, 0, &r), 0);
	cr_assert_eq(r.status, NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_WRITE_READ_ONLY));
	cr_assert_eq(run(7, "v", "2 3", out, sizeof(out), &olen), 0);
	cr_assert_eq(olen, 3);
	cr_assert_eq(memcmp(out, "cde", 3), 0);
}

Test(exec, bad_arguments)
{
	uint32_t olen;
	char out[8];

	cr_assert_eq(nkv_exec(qp, NULL, 1, 0, NULL, 0, out, 8, &olen), -EINVAL);
	cr_assert_eq(nkv_exec(qp, "k", 0, 0, NULL, 0, out, 8, &olen), -EINVAL);
	cr_assert_eq(nkv_exec(qp, "k", 256, 0, NULL, 0, out, 8, &olen), -EINVAL);
	cr_assert_eq(nkv_exec(qp, "k", 1, 0, NULL, 4, out, 8, &olen), -EINVAL);
	cr_assert_eq(nkv_exec(qp, "k", 1, 0, NULL, 0, NULL, 8, &olen), -EINVAL);
	cr_assert_eq(nkv_exec(qp, "k", 1, 0, NULL, 0, out, 8, NULL), -EINVAL);
}
