/* SPDX-License-Identifier: MIT */
/*
 * sandbox.c - one Exec call in a fresh Lua 5.3 state (Debian's liblua5.3,
 * the version Ceph's cls_lua links, so the same modules can later run in
 * an OSD).
 *
 * What a module sees is allowlisted, as Redis's scripting does: the base
 * library without dofile, loadfile, print and collectgarbage, load for
 * text chunks only, and string (without string.dump), table, math and
 * utf8; no io, os, package/require, debug or coroutine. The value is a
 * read-only userdata with :len() and :sub(i, j); the input a string.
 * Budgets: memory through our own allocator (refuses past max_memory,
 * counted from the moment module code first runs), instructions and wall
 * time through a count hook that, once a budget is spent, re-arms itself
 * on every instruction and raises again, so a pcall in the module cannot
 * swallow the end. A fresh state per call: nothing one call does is seen
 * by the next; the compiled chunk comes from the cache (cache.c).
 */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec.h"

/* Instructions between two looks at the budgets: the instruction budget
 * is kept to this grain; a look costs one clock read. */
#define NKV_EXEC_HOOK_STEP 1000

enum { NKV_EXEC_LIVE, NKV_EXEC_KILL_INSTR, NKV_EXEC_KILL_WALL };

struct nkv_exec_ctx {
	size_t used;		/* bytes the state holds */
	size_t limit;		/* SIZE_MAX while the runtime sets up */
	int refused;		/* an allocation past the limit was refused */
	int killed;		/* NKV_EXEC_KILL_* */
	int out_over;		/* the result was longer than max_output */
	uint64_t steps;
	uint64_t max_steps;
	uint64_t deadline_ns;
	const struct nkv_exec_run *run;
};

struct nkv_exec_val {
	const uint8_t *p;
	size_t len;
};

#define NKV_EXEC_VAL_MT "nkv.value"

static uint64_t nkv_exec_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Large blocks (a slice of the value, the result being built) kept by
 * the worker between calls, by power-of-two class, instead of going back
 * to the C library: one of 128 KiB and up is an mmap each time there,
 * and every page of it a fault when first written. Every block is
 * malloc's, so whatever a block's class, free() is right for it.
 */
#define NKV_EXEC_BIG_SHIFT 16u		/* blocks of 64 KiB and up */
#define NKV_EXEC_CLASSES 12u		/* 64 KiB .. 128 MiB */
#define NKV_EXEC_SPARE_MAX (32u << 20)	/* bytes kept per worker */

static __thread struct {
	void *head[NKV_EXEC_CLASSES];
	size_t bytes;
} nkv_exec_spare;

/* The class of a block of n bytes, or -1: not a large one. */
static int nkv_exec_class(size_t n)
{
	unsigned c = 0;

	if (n < (1u << NKV_EXEC_BIG_SHIFT))
		return -1;
	while (((size_t)1 << (NKV_EXEC_BIG_SHIFT + c)) < n)
		c++;
	return c < NKV_EXEC_CLASSES ? (int)c : -1;
}

static void *nkv_exec_big_get(int c)
{
	void *p = nkv_exec_spare.head[c];

	if (!p)
		return malloc((size_t)1 << (NKV_EXEC_BIG_SHIFT + (unsigned)c));
	nkv_exec_spare.head[c] = *(void **)p;
	nkv_exec_spare.bytes -= (size_t)1 << (NKV_EXEC_BIG_SHIFT + (unsigned)c);
	return p;
}

static void nkv_exec_big_put(void *p, int c)
{
	size_t sz = (size_t)1 << (NKV_EXEC_BIG_SHIFT + (unsigned)c);

	if (nkv_exec_spare.bytes + sz > NKV_EXEC_SPARE_MAX) {
		free(p);
		return;
	}
	*(void **)p = nkv_exec_spare.head[c];
	nkv_exec_spare.head[c] = p;
	nkv_exec_spare.bytes += sz;
}

void nkv_exec_sandbox_release(void)
{
	unsigned c;

	for (c = 0; c < NKV_EXEC_CLASSES; c++)
		while (nkv_exec_spare.head[c])
			free(nkv_exec_big_get((int)c));
}

/* realloc with the large blocks kept: old (0: none) to n bytes (0: free). */
static void *nkv_exec_realloc(void *ptr, size_t old, size_t n)
{
	int oc = ptr ? nkv_exec_class(old) : -1, nc = nkv_exec_class(n);
	void *p;

	if (oc < 0 && nc < 0)
		return n ? realloc(ptr, n) : (free(ptr), NULL);
	if (ptr && oc == nc && n)
		return ptr;
	if (!n) {
		nkv_exec_big_put(ptr, oc);
		return NULL;
	}
	p = nc >= 0 ? nkv_exec_big_get(nc) : malloc(n);
	if (!p)
		return n <= old ? ptr : NULL;	/* a shrink never fails (Lua's rule) */
	if (ptr) {
		memcpy(p, ptr, old < n ? old : n);
		if (oc >= 0)
			nkv_exec_big_put(ptr, oc);
		else
			free(ptr);
	}
	return p;
}

/* lua_Alloc: the state's every byte, refused past the limit. */
static void *nkv_exec_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct nkv_exec_ctx *x = ud;
	size_t old = ptr ? osize : 0;	/* with ptr NULL, osize is a type tag */
	void *p;

	if (!nsize) {
		nkv_exec_realloc(ptr, old, 0);
		x->used -= old;
		return NULL;
	}
	if (nsize > old && x->used + (nsize - old) > x->limit) {
		x->refused = 1;
		return NULL;
	}
	p = nkv_exec_realloc(ptr, old, nsize);
	if (p)
		x->used = x->used - old + nsize;
	return p;
}

static struct nkv_exec_ctx *nkv_exec_ctx_of(lua_State *L)
{
	return *(struct nkv_exec_ctx **)lua_getextraspace(L);
}

static void nkv_exec_hook(lua_State *L, lua_Debug *ar)
{
	struct nkv_exec_ctx *x = nkv_exec_ctx_of(L);

	(void)ar;
	if (!x->killed && ++x->steps > x->max_steps)
		x->killed = NKV_EXEC_KILL_INSTR;
	if (!x->killed && nkv_exec_now_ns() > x->deadline_ns)
		x->killed = NKV_EXEC_KILL_WALL;
	if (!x->killed)
		return;
	/* Every instruction from now on: a pcall that caught this error
	 * meets the next one at once. */
	lua_sethook(L, nkv_exec_hook, LUA_MASKCOUNT, 1);
	luaL_error(L, "exec budget exceeded");
}

/* string.sub's index rules: negative counts from the end, clamped. */
static lua_Integer nkv_exec_pos(lua_Integer pos, size_t len)
{
	if (pos >= 0)
		return pos;
	if ((size_t)0 - (size_t)pos > len)
		return 0;
	return (lua_Integer)len + pos + 1;
}

static int nkv_exec_val_len(lua_State *L)
{
	const struct nkv_exec_val *v = luaL_checkudata(L, 1, NKV_EXEC_VAL_MT);

	lua_pushinteger(L, (lua_Integer)v->len);
	return 1;
}

/* The pager's bytes for [off, off + len) (nkv_exec_run.fetch): 0, or
 * nonzero once a read failed (this and every later sub fails). */
static int nkv_exec_fetch(lua_State *L, uint64_t off, uint64_t len)
{
	struct nkv_exec_run *r = (struct nkv_exec_run *)nkv_exec_ctx_of(L)->run;

	if (!r->fetch)
		return 0;
	if (!r->fetch_status)
		r->fetch_status = r->fetch(r->fetch_ctx, off, len);
	return r->fetch_status;
}

static int nkv_exec_val_sub(lua_State *L)
{
	const struct nkv_exec_val *v = luaL_checkudata(L, 1, NKV_EXEC_VAL_MT);
	lua_Integer i = nkv_exec_pos(luaL_optinteger(L, 2, 1), v->len);
	lua_Integer j = nkv_exec_pos(luaL_optinteger(L, 3, -1), v->len);

	if (i < 1)
		i = 1;
	if (j > (lua_Integer)v->len)
		j = (lua_Integer)v->len;
	if (i > j) {
		lua_pushliteral(L, "");
		return 1;
	}
	if (nkv_exec_fetch(L, (uint64_t)i - 1, (uint64_t)(j - i + 1)))
		return luaL_error(L, "reading the value failed");
	lua_pushlstring(L, (const char *)v->p + i - 1, (size_t)(j - i + 1));
	return 1;
}

/* load for text chunks only (mode "t" whatever the module asks), with
 * the sandbox's globals or the env it gives. */
static int nkv_exec_load(lua_State *L)
{
	size_t len;
	const char *s = luaL_checklstring(L, 1, &len);
	const char *name = luaL_optstring(L, 2, "=(load)");
	int env = !lua_isnone(L, 4);

	if (luaL_loadbufferx(L, s, len, name, "t") != LUA_OK) {
		lua_pushnil(L);
		lua_insert(L, -2);
		return 2;
	}
	if (env) {
		lua_pushvalue(L, 4);
		if (!lua_setupvalue(L, -2, 1))
			lua_pop(L, 1);
	}
	return 1;
}

static void nkv_exec_lib(lua_State *L, const char *name, lua_CFunction open)
{
	luaL_requiref(L, name, open, 1);
	lua_pop(L, 1);
}

/* The globals a module gets (run protected: allocation may fail). */
static int nkv_exec_setup(lua_State *L)
{
	static const char *const drop[] = { "dofile", "loadfile", "print", "collectgarbage",
					    "require", NULL };
	static const luaL_Reg val[] = { { "len", nkv_exec_val_len },
					{ "sub", nkv_exec_val_sub },
					{ NULL, NULL } };
	int i;

	nkv_exec_lib(L, "_G", luaopen_base);
	nkv_exec_lib(L, LUA_STRLIBNAME, luaopen_string);
	nkv_exec_lib(L, LUA_TABLIBNAME, luaopen_table);
	nkv_exec_lib(L, LUA_MATHLIBNAME, luaopen_math);
	nkv_exec_lib(L, LUA_UTF8LIBNAME, luaopen_utf8);
	for (i = 0; drop[i]; i++) {
		lua_pushnil(L);
		lua_setglobal(L, drop[i]);
	}
	lua_pushcfunction(L, nkv_exec_load);
	lua_setglobal(L, "load");
	lua_getglobal(L, LUA_STRLIBNAME);
	lua_pushnil(L);
	lua_setfield(L, -2, "dump");	/* also gone from strings' __index */
	lua_pop(L, 1);
	/* The value's type: methods, # as :len(), metatable hidden. */
	luaL_newmetatable(L, NKV_EXEC_VAL_MT);
	luaL_newlib(L, val);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, nkv_exec_val_len);
	lua_setfield(L, -2, "__len");
	lua_pushboolean(L, 0);
	lua_setfield(L, -2, "__metatable");
	lua_pop(L, 1);
	return 0;
}

/* Output of the call's result at the top of the stack into r. */
static int nkv_exec_output(lua_State *L, struct nkv_exec_run *r)
{
	size_t n = 0;
	const char *s;

	/* A module that caught a failed read returns what it made without
	 * the value: never sent. */
	if (r->fetch_status)
		return luaL_error(L, "reading the value failed");
	if (lua_isnil(L, -1))
		return 0;
	if (lua_type(L, -1) != LUA_TSTRING)
		return luaL_error(L, "the module returned a %s, not a string or nil",
				  luaL_typename(L, -1));
	s = lua_tolstring(L, -1, &n);
	if (n > r->caps.max_output) {
		nkv_exec_ctx_of(L)->out_over = 1;
		return luaL_error(L, "output of %zu bytes past max_output", n);
	}
	r->out_len = n;
	if (r->emit) {
		r->emit_status = n ? r->emit(r->emit_ctx, s, n) : 0;
		return 0;
	}
	r->out = n ? malloc(n) : NULL;
	if (n && !r->out)
		return luaL_error(L, "no memory for the output");
	memcpy(r->out, s, n);
	r->out_len = n;
	return 0;
}

/* The call itself, protected: chunk -> function -> function(value, input). */
static int nkv_exec_main(lua_State *L)
{
	struct nkv_exec_ctx *x = nkv_exec_ctx_of(L);
	struct nkv_exec_run *r = (struct nkv_exec_run *)x->run;
	struct nkv_exec_val *v;

	/* The cache's own dump of a text chunk: bytecode is ours to load. */
	if (luaL_loadbufferx(L, r->code, r->code_len, "=module", "b") != LUA_OK)
		return lua_error(L);
	v = lua_newuserdata(L, sizeof(*v));
	v->p = r->value;
	v->len = r->value_len;
	luaL_setmetatable(L, NKV_EXEC_VAL_MT);
	lua_pushlstring(L, (const char *)r->in, r->in_len);
	/* Budgets from here: the module's own code. */
	x->limit = x->used + r->caps.max_memory;
	x->max_steps = r->caps.max_instructions / NKV_EXEC_HOOK_STEP + 1;
	x->deadline_ns = nkv_exec_now_ns() + (uint64_t)r->caps.max_wall_ms * 1000000ull;
	lua_sethook(L, nkv_exec_hook, LUA_MASKCOUNT, NKV_EXEC_HOOK_STEP);
	lua_pushvalue(L, -3);
	lua_call(L, 0, 1);
	if (!lua_isfunction(L, -1))
		return luaL_error(L, "the module must return a function(value, input)");
	lua_insert(L, -3);
	lua_call(L, 2, 1);
	return nkv_exec_output(L, r);
}

static void nkv_exec_msg(lua_State *L, struct nkv_exec_run *r, const char *why)
{
	const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(not a string)";

	snprintf(r->msg, sizeof(r->msg), "%s%s", why, why[0] ? "" : m);
}

/* Why a failed call failed: a budget, or the module. */
static int nkv_exec_verdict(lua_State *L, struct nkv_exec_ctx *x, struct nkv_exec_run *r, int rc)
{
	if (x->killed == NKV_EXEC_KILL_INSTR) {
		nkv_exec_msg(L, r, "instruction budget (max_instructions)");
	} else if (x->killed == NKV_EXEC_KILL_WALL) {
		nkv_exec_msg(L, r, "wall time budget (max_wall_ms)");
	} else if (rc == LUA_ERRMEM || x->refused) {
		nkv_exec_msg(L, r, "memory budget (max_memory)");
	} else if (r->fetch_status) {
		snprintf(r->msg, sizeof(r->msg), "reading the value failed");
		return NKV_SC_EXEC_MODULE;	/* pool.c answers with the read's status */
	} else if (x->out_over) {
		nkv_exec_msg(L, r, "output budget (max_output)");
	} else {
		nkv_exec_msg(L, r, "");
		return NKV_SC_EXEC_MODULE;
	}
	return NKV_SC_EXEC_BUDGET;
}

int nkv_exec_sandbox_run(struct nkv_exec_run *r)
{
	struct nkv_exec_ctx x = { .limit = SIZE_MAX, .run = r };
	lua_State *L = lua_newstate(nkv_exec_alloc, &x);
	int rc;

	r->out = NULL;
	r->out_len = 0;
	r->msg[0] = 0;
	if (!L) {
		snprintf(r->msg, sizeof(r->msg), "no memory for a Lua state");
		return NKV_SC_EXEC_MODULE;
	}
	*(struct nkv_exec_ctx **)lua_getextraspace(L) = &x;
	lua_pushcfunction(L, nkv_exec_setup);
	rc = lua_pcall(L, 0, 0, 0);
	if (rc == LUA_OK) {
		lua_pushcfunction(L, nkv_exec_main);
		rc = lua_pcall(L, 0, 0, 0);
	}
	if (rc != LUA_OK)
		rc = nkv_exec_verdict(L, &x, r, rc);
	r->instructions = x.steps * NKV_EXEC_HOOK_STEP;
	lua_close(L);
	if (rc) {
		free(r->out);
		r->out = NULL;
		r->out_len = 0;
	}
	return rc;
}

struct nkv_exec_dump {
	uint8_t *p;
	size_t len, cap;
};

static int nkv_exec_writer(lua_State *L, const void *p, size_t sz, void *ud)
{
	struct nkv_exec_dump *d = ud;

	(void)L;
	if (d->len + sz > d->cap) {
		size_t cap = (d->len + sz) * 2;
		uint8_t *n = realloc(d->p, cap);

		if (!n)
			return 1;
		d->p = n;
		d->cap = cap;
	}
	memcpy(d->p + d->len, p, sz);
	d->len += sz;
	return 0;
}

int nkv_exec_compile(const void *src, size_t len, void **code, size_t *code_len, char *msg,
		     size_t msglen)
{
	struct nkv_exec_ctx x = { .limit = NKV_EXEC_DEF_MEMORY };
	struct nkv_exec_dump d = { 0 };
	lua_State *L = lua_newstate(nkv_exec_alloc, &x);
	int rc = -EINVAL;

	if (!L) {
		snprintf(msg, msglen, "no memory for a Lua state");
		return -ENOMEM;
	}
	/* Text only: a module stored as bytecode is refused here. */
	if (luaL_loadbufferx(L, src, len, "=module", "t") != LUA_OK)
		snprintf(msg, msglen, "%s", lua_tostring(L, -1));
	else if (lua_dump(L, nkv_exec_writer, &d, 0) || !d.len)
		snprintf(msg, msglen, "no memory to compile");
	else
		rc = 0;
	lua_close(L);
	if (rc) {
		free(d.p);
		return rc;
	}
	*code = d.p;
	*code_len = d.len;
	return 0;
}
