/* SPDX-License-Identifier: MIT */
/*
 * registry.c - the method table (rpc.h): registration, the request's
 * envelope and params checked before a handler runs, rpc_list.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "target/rpc/rpc.h"

struct nkv_rpc_method {
	const char *name;
	const char *summary;
	const struct nkv_rpc_param *params;
	nkv_rpc_handler fn;
};

/* Written under the lock; a method once added is never changed or
 * removed, so lookups read the count (acquire) and then the rows. */
static pthread_mutex_t nkv_rpc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nkv_rpc_method nkv_rpc_methods[NKV_RPC_MAX_METHODS];
static unsigned nkv_rpc_nmethods;

static const struct nkv_rpc_method *nkv_rpc_find(const char *name)
{
	unsigned i, n = __atomic_load_n(&nkv_rpc_nmethods, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (!strcmp(nkv_rpc_methods[i].name, name))
			return &nkv_rpc_methods[i];
	return NULL;
}

int nkv_rpc_register(const char *name, const char *summary,
		     const struct nkv_rpc_param *params, nkv_rpc_handler fn)
{
	int rc = 0;

	if (!name || !*name || !fn)
		return -EINVAL;
	pthread_mutex_lock(&nkv_rpc_lock);
	if (nkv_rpc_find(name))
		rc = -EEXIST;
	else if (nkv_rpc_nmethods == NKV_RPC_MAX_METHODS)
		rc = -ENOSPC;
	else
		nkv_rpc_methods[nkv_rpc_nmethods] =
			(struct nkv_rpc_method){ name, summary ? summary : "", params, fn };
	if (!rc)
		__atomic_store_n(&nkv_rpc_nmethods, nkv_rpc_nmethods + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&nkv_rpc_lock);
	return rc;
}

void nkv_rpc_error(struct nkv_rpc_call *call, int code, const char *fmt, ...)
{
	va_list ap;

	call->code = code;
	va_start(ap, fmt);
	vsnprintf(call->msg, sizeof(call->msg), fmt, ap);
	va_end(ap);
}

int nkv_rpc_param_u64(struct nkv_rpc_call *call, const char *name, uint64_t min,
		      uint64_t max, uint64_t *out)
{
	struct json_object *v;
	int64_t i;

	if (!json_object_object_get_ex(call->params, name, &v))
		return 0;
	i = json_object_get_int64(v);
	/* json-c saturates at INT64_MAX: a larger number is refused too */
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max || i == INT64_MAX) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "param '%s' must be %llu..%llu", name,
			      (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = (uint64_t)i;
	return 1;
}

static const char *nkv_rpc_type_name(json_type t)
{
	switch (t) {
	case json_type_int: return "integer";
	case json_type_string: return "string";
	case json_type_boolean: return "boolean";
	case json_type_object: return "object";
	case json_type_array: return "array";
	case json_type_double: return "number";
	default: return "null";
	}
}

static const struct nkv_rpc_param *nkv_rpc_param_find(const struct nkv_rpc_param *p,
						      const char *key)
{
	for (; p && p->name; p++)
		if (!strcmp(p->name, key))
			return p;
	return NULL;
}

/* Every key known and of its type, every required one there (SPDK's
 * decoders and Ceph's admin socket check args before the hook runs). */
static int nkv_rpc_check_params(const struct nkv_rpc_method *m, struct nkv_rpc_call *call)
{
	const struct nkv_rpc_param *p;

	json_object_object_foreach(call->params, key, val) {
		p = nkv_rpc_param_find(m->params, key);
		if (!p)
			p = nkv_rpc_param_find(m->params, "*");
		if (!p) {
			nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "unknown param '%s' for %s "
				      "(rpc_list names its params)", key, m->name);
			return -1;
		}
		if (!json_object_is_type(val, p->type)) {
			nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "param '%s' must be %s %s",
				      key, p->type == json_type_int ? "an" : "a",
				      nkv_rpc_type_name(p->type));
			return -1;
		}
	}
	for (p = m->params; p && p->name; p++)
		if (p->required && !json_object_object_get_ex(call->params, p->name, NULL)) {
			nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "missing param '%s' for %s",
				      p->name, m->name);
			return -1;
		}
	return 0;
}

struct json_object *nkv_rpc_error_response(struct json_object *id, int code, const char *msg)
{
	struct json_object *r = json_object_new_object(), *e = json_object_new_object();

	json_object_object_add(r, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", json_object_new_string(msg));
	json_object_object_add(r, "error", e);
	json_object_object_add(r, "id", id ? json_object_get(id) : NULL);
	return r;
}

static struct json_object *nkv_rpc_result_response(struct json_object *id,
						   struct json_object *result)
{
	struct json_object *r = json_object_new_object();

	json_object_object_add(r, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(r, "result", result);
	json_object_object_add(r, "id", json_object_get(id));
	return r;
}

/* The envelope: jsonrpc "2.0", a string method, params an object or
 * absent, id a string, an integer or null. NULL, or why not. */
static const char *nkv_rpc_envelope(struct json_object *req, const char **method,
				    struct json_object **id)
{
	struct json_object *v, *m;

	if (!json_object_is_type(req, json_type_object))
		return json_object_is_type(req, json_type_array) ? "batch requests are not supported"
								   : "a request must be an object";
	if (json_object_object_get_ex(req, "id", id) && *id &&
	    !json_object_is_type(*id, json_type_string) && !json_object_is_type(*id, json_type_int)) {
		*id = NULL;	/* answered with id null, as one not understood */
		return "id must be a string, an integer or null";
	}
	if (!json_object_object_get_ex(req, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), "2.0"))
		return "\"jsonrpc\" must be \"2.0\"";
	if (!json_object_object_get_ex(req, "method", &m) || !json_object_is_type(m, json_type_string))
		return "\"method\" must be a string";
	*method = json_object_get_string(m);
	json_object_object_foreach(req, key, val) {
		(void)val;
		if (strcmp(key, "jsonrpc") && strcmp(key, "method") && strcmp(key, "params") &&
		    strcmp(key, "id"))
			return "unknown member in the request (jsonrpc, method, params, id only)";
	}
	return NULL;
}

/* Check the params, then run the handler: call->result, or call failed. */
static void nkv_rpc_call_method(const struct nkv_rpc_method *m, struct json_object *params,
				struct nkv_rpc_call *call)
{
	if (params && !json_object_is_type(params, json_type_object)) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "params must be an object (by name)");
		return;
	}
	call->params = params ? params : json_object_new_object();
	if (!nkv_rpc_check_params(m, call))
		m->fn(call);
	if (!params)
		json_object_put(call->params);
	if (call->code) {
		json_object_put(call->result);
		call->result = NULL;
	}
}

struct json_object *nkv_rpc_run(struct json_object *req, void *ctx, struct nkv_rpc_server *server)
{
	struct json_object *params = NULL, *id = NULL;
	struct nkv_rpc_call call = { .ctx = ctx, .server = server };
	const struct nkv_rpc_method *m;
	const char *method = NULL, *why;
	int has_id;

	why = nkv_rpc_envelope(req, &method, &id);
	if (why)	/* an invalid request is answered, id or not */
		return nkv_rpc_error_response(id, NKV_RPC_INVALID_REQUEST, why);
	has_id = json_object_object_get_ex(req, "id", NULL);
	json_object_object_get_ex(req, "params", &params);
	m = nkv_rpc_find(method);
	if (m)
		nkv_rpc_call_method(m, params, &call);
	else
		nkv_rpc_error(&call, NKV_RPC_METHOD_NOT_FOUND,
			      "method '%s' not found (rpc_list lists them)", method);
	if (!has_id) {		/* a notification: no response */
		json_object_put(call.result);
		return NULL;
	}
	if (call.code)
		return nkv_rpc_error_response(id, call.code, call.msg);
	return nkv_rpc_result_response(id, call.result);
}

/* rpc_list: every method, its params and help, in registration order. */
static struct json_object *nkv_rpc_param_json(const struct nkv_rpc_param *p)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(p->name));
	json_object_object_add(o, "type", json_object_new_string(nkv_rpc_type_name(p->type)));
	json_object_object_add(o, "required", json_object_new_boolean(p->required));
	json_object_object_add(o, "doc", json_object_new_string(p->doc ? p->doc : ""));
	return o;
}

static void nkv_rpc_list(struct nkv_rpc_call *call)
{
	unsigned i, n = __atomic_load_n(&nkv_rpc_nmethods, __ATOMIC_ACQUIRE);
	struct json_object *arr = json_object_new_array();

	for (i = 0; i < n; i++) {
		const struct nkv_rpc_method *m = &nkv_rpc_methods[i];
		struct json_object *o = json_object_new_object(), *ps = json_object_new_array();
		const struct nkv_rpc_param *p;

		for (p = m->params; p && p->name; p++)
			json_object_array_add(ps, nkv_rpc_param_json(p));
		json_object_object_add(o, "name", json_object_new_string(m->name));
		json_object_object_add(o, "summary", json_object_new_string(m->summary));
		json_object_object_add(o, "params", ps);
		json_object_array_add(arr, o);
	}
	call->result = arr;
}

/* rpc_list is the registry's own: there from the first lookup on. */
__attribute__((constructor)) static void nkv_rpc_registry_init(void)
{
	(void)nkv_rpc_register("rpc_list", "every method with its params", NULL, nkv_rpc_list);
}
