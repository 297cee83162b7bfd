/* SPDX-License-Identifier: MIT */
/*
 * ns_ext.c - what a KV namespace honours beyond the KV command set: its
 * NSATTR and the nkvX vendor bytes of its KV Identify Namespace (struct
 * nkv_kv_vs), the client's wait that follows from the command time it
 * advertises, and the names of the vendor Store options for messages.
 */
#include <stdio.h>
#include <string.h>

#include "host/host.h"

void nkv_h_ns_ext_parse(const struct nkv_id_ns_kv *id, uint32_t nsid, struct nkv_ns_ext *ext)
{
	struct nkv_kv_vs vs;

	memset(ext, 0, sizeof(*ext));
	ext->size = sizeof(*ext);
	ext->nsid = nsid;
	/* NSATTR is the base specification's: any controller may set it. */
	ext->read_only = (id->nsattr & NKV_NSATTR_WRITE_PROTECTED) ? 1 : 0;
	memcpy(&vs, id->vs, sizeof(vs));
	/* Another vendor's bytes, or none: nothing advertised. A later
	 * version keeps version 1's fields where they are. */
	if (memcmp(vs.sig, NKV_KV_VS_SIG, sizeof(vs.sig)) || vs.ver < NKV_KV_VS_VER)
		return;
	ext->advertised = 1;
	ext->store_opts = vs.store_opts & NKV_STORE_VENDOR_MASK;
	ext->max_ttl = vs.max_ttl;
	ext->read_only |= (vs.flags & NKV_KV_VS_READ_ONLY) ? 1 : 0;
	ext->size_query = (vs.flags & NKV_KV_VS_SIZE_QUERY) ? 1 : 0;
	ext->exec = (vs.flags & NKV_KV_VS_EXEC) ? 1 : 0;
	ext->cmd_timeout_ms = vs.cmd_timeout_ms;
}

uint32_t nkv_h_cmd_wait_ms(uint32_t cmd_timeout_ms)
{
	uint64_t margin = cmd_timeout_ms / 4u, wait;

	if (!cmd_timeout_ms)
		return 0;
	wait = (uint64_t)cmd_timeout_ms + (margin > 2000u ? margin : 2000u);
	return wait > UINT32_MAX ? UINT32_MAX : (uint32_t)wait;
}

uint32_t nkv_h_io_timeout(const struct nkv_ctrl *c, uint32_t asked, uint32_t dflt,
			  const char *what)
{
	uint32_t need = nkv_h_cmd_wait_ms(c->ext.cmd_timeout_ms);

	if (!asked)
		return dflt > need ? dflt : need;
	if (asked < need)
		nkv_h_log("%s %u ms is shorter than namespace %u needs: it may take %u ms to "
			  "answer a command with its own status (88h when its store does not "
			  "answer), so the library would wait %u ms; such a command times out "
			  "here instead (kept as set)", what, asked, c->nsid, c->ext.cmd_timeout_ms,
			  need);
	return asked;
}

const char *nkv_h_store_opts_str(uint32_t opts, char *buf, size_t len)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
		{ NKV_STORE_TTL, "TTL (option bit 3)" },
		{ NKV_STORE_EPHEMERAL, "ephemeral (option bit 4)" },
		{ NKV_STORE_TOUCH, "touch (option bit 5)" },
	};
	size_t i, used = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && used < len; i++)
		if (opts & names[i].bit)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
						 names[i].name);
	if (!used)
		snprintf(buf, len, "none");
	return buf;
}
