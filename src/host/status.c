/* SPDX-License-Identifier: MIT */
/*
 * status.c - names of NVMe statuses (generic, command specific, media and
 * path types) as the base and Key Value command set specifications call
 * them, and of the reasons a queue pair stops (enum nkv_qp_state).
 */
#include <stddef.h>

#include "host/host.h"

struct nkv_h_stname {
	uint16_t st;	/* SCT << 8 | SC */
	const char *name;
};

static const struct nkv_h_stname nkv_h_stnames[] = {
	{ 0x000, "Success" },
	{ 0x001, "Invalid Command Opcode" },
	{ 0x002, "Invalid Field in Command" },
	{ 0x003, "Command ID Conflict" },
	{ 0x004, "Data Transfer Error" },
	{ 0x005, "Commands Aborted due to Power Loss Notification" },
	{ 0x006, "Internal Error" },
	{ 0x007, "Command Abort Requested" },
	{ 0x008, "Command Aborted due to SQ Deletion" },
	{ 0x00b, "Invalid Namespace or Format" },
	{ 0x00c, "Command Sequence Error" },
	{ 0x013, "PRP Offset Invalid" },
	/* Read-only namespaces: one clear text for both ways of saying it
	 * (rados-nkv answers 82h), the specification's name after it. */
	{ 0x020, "read-only namespace: writes are refused (Namespace is Write Protected)" },
	{ 0x080, "LBA Out of Range" },
	{ 0x081, "Capacity Exceeded" },
	{ 0x082, "Namespace Not Ready" },
	{ 0x085, "Invalid Value Size" },
	{ 0x086, "Invalid Key Size" },
	{ 0x087, "Key Does Not Exist" },
	{ 0x088, "Unrecovered Error" },
	{ 0x089, "Key Exists" },
	{ 0x100, "Completion Queue Invalid" },
	{ 0x101, "Invalid Queue Identifier" },
	{ 0x102, "Invalid Queue Size" },
	{ 0x103, "Abort Command Limit Exceeded" },
	{ 0x109, "Invalid Log Page" },
	{ 0x10c, "Invalid Queue Deletion" },
	{ 0x10d, "Feature Identifier Not Saveable" },
	{ 0x10e, "Feature Not Changeable" },
	{ 0x182, "read-only namespace: writes are refused (Attempted Write to Read Only Range)" },
	{ 0x281, "Unrecovered Read Error" },
};

int nkv_status_read_only(uint16_t status)
{
	uint16_t st = status & 0x7ff;

	return st == NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_NS_WRITE_PROTECTED) ||
	       st == NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_WRITE_READ_ONLY);
}

const char *nkv_status_str(uint16_t status)
{
	/* DNR and More do not change what happened. */
	uint16_t st = status & 0x7ff;
	size_t i;

	for (i = 0; i < sizeof(nkv_h_stnames) / sizeof(nkv_h_stnames[0]); i++)
		if (nkv_h_stnames[i].st == st)
			return nkv_h_stnames[i].name;
	switch (nkv_status_sct(st)) {
	case NKV_SCT_GENERIC: return "Unknown Generic Status";
	case NKV_SCT_CMD_SPECIFIC: return "Unknown Command Specific Status";
	case NKV_SCT_MEDIA: return "Media or Data Integrity Error";
	case NKV_SCT_PATH: return "Path Related Status";
	case NKV_SCT_VENDOR: return "Vendor Specific Status";
	default: return "Reserved Status Code Type";
	}
}

const char *nkv_qp_state_str(enum nkv_qp_state state)
{
	switch (state) {
	case NKV_QP_OK:
		return "ok";
	case NKV_QP_FAILED_TIMEOUT:
		return "timed out: no completion within the queue pair's timeout";
	case NKV_QP_FAILED_BAD_CQE:
		return "bad completion: a CID not in flight, or a bad SQ head";
	case NKV_QP_FAILED_INTERNAL:
		return "internal: a command could not be published, or a reset failed";
	case NKV_QP_FAILED_ARGS:
		return "bad arguments: a kernel was given what it cannot run";
	case NKV_QP_FAILED_GONE:
		return "controller gone: its connection closed, or its registers read "
		       "all-ones or CSTS.CFS";
	default:
		return "unknown reason";
	}
}
