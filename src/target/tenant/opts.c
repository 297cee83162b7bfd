/* SPDX-License-Identifier: MIT */
/*
 * opts.c - access rules and quotas from nkv-target's options and config
 * file: --access, --access-default, --quota, each value the words of the
 * RPC method's params, "key=value" apart by blanks ("nsid=1 uid=1000
 * access=ro"), so a rule reads the same in both places (docs/target.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/tenant/tenant.h"

/* One option's words, as the RPC params. */
struct nkv_tenant_words {
	uint64_t nsid, bytes, keys;
	int has_nsid, has_access;
	enum nkv_access access;
	struct nkv_tenant_subject s;
	int subjects;
};

static int nkv_tenant_num(const char *v, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 0);
	if (errno || end == v || *end || *v == '-' || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

/* key=value into w: 0, or -EINVAL with err said. */
static int nkv_tenant_word(char *word, struct nkv_tenant_words *w, char *err, size_t len)
{
	char *v = strchr(word, '=');
	uint64_t n = 0;
	int rc = 0;

	if (!v || v == word || !v[1]) {
		snprintf(err, len, "'%s' is not key=value", word);
		return -EINVAL;
	}
	*v++ = 0;
	if (!strcmp(word, "nsid")) {
		rc = nkv_tenant_num(v, NKV_TENANT_NS_MAX, &w->nsid);
		w->has_nsid = !rc && w->nsid;
		rc = w->has_nsid ? 0 : -EINVAL;
	} else if (!strcmp(word, "uid") || !strcmp(word, "gid")) {
		rc = nkv_tenant_num(v, UINT32_MAX, &n);
		w->s.by = *word == 'u' ? NKV_TENANT_BY_UID : NKV_TENANT_BY_GID;
		w->s.id = (uint32_t)n;
		w->subjects++;
	} else if (!strcmp(word, "hostnqn")) {
		rc = strlen(v) < sizeof(w->s.nqn) ? 0 : -EINVAL;
		w->s.by = NKV_TENANT_BY_NQN;
		snprintf(w->s.nqn, sizeof(w->s.nqn), "%.*s", (int)sizeof(w->s.nqn) - 1, v);
		w->subjects++;
	} else if (!strcmp(word, "access")) {
		rc = nkv_access_parse(v, &w->access);
		w->has_access = !rc;
	} else if (!strcmp(word, "bytes") || !strcmp(word, "keys")) {
		rc = nkv_tenant_num(v, UINT64_MAX - 1, *word == 'b' ? &w->bytes : &w->keys);
	} else {
		snprintf(err, len, "unknown key '%s' (nsid, uid, gid, hostnqn, access, bytes, keys)",
			 word);
		return -EINVAL;
	}
	if (rc)
		snprintf(err, len, "bad value '%s' for '%s'", v, word);
	return rc;
}

/* What each option needs: nsid always; access for both access ones; one
 * subject for --access and --quota. */
static int nkv_tenant_words_ok(const char *opt, const struct nkv_tenant_words *w, char *err,
			       size_t len)
{
	int quota = !strcmp(opt, "quota"), def = !strcmp(opt, "access-default");

	if (!w->has_nsid)
		snprintf(err, len, "nsid=1..%d missing", NKV_TENANT_NS_MAX);
	else if (!quota && !w->has_access)
		snprintf(err, len, "access=rw|ro|none missing");
	else if (!def && w->subjects != 1)
		snprintf(err, len, "give one of uid=, gid= or hostnqn=");
	else if (def && w->subjects)
		snprintf(err, len, "a default names no uid, gid or hostnqn");
	else
		return 0;
	return -EINVAL;
}

int nkv_tenant_opt(struct nkv_tenants *t, const char *opt, const char *value, char *err,
		   size_t len)
{
	struct nkv_tenant_words w;
	char *copy = strdup(value), *save = NULL, *word;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	memset(&w, 0, sizeof(w));
	for (word = strtok_r(copy, " \t", &save); word && !rc; word = strtok_r(NULL, " \t", &save))
		rc = nkv_tenant_word(word, &w, err, len);
	free(copy);
	if (!rc)
		rc = nkv_tenant_words_ok(opt, &w, err, len);
	if (rc || !t)
		return rc;
	if (!strcmp(opt, "quota"))
		rc = nkv_quota_set(t, (uint32_t)w.nsid, &w.s, w.bytes, w.keys);
	else if (!strcmp(opt, "access"))
		rc = nkv_access_set(t, (uint32_t)w.nsid, &w.s, w.access);
	else
		rc = nkv_access_default_set(t, (uint32_t)w.nsid, w.access);
	if (rc)
		snprintf(err, len, "nsid %llu holds %d rules already", (unsigned long long)w.nsid,
			 NKV_TENANT_RULES);
	return rc;
}
