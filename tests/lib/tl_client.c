/* SPDX-License-Identifier: MIT */
/*
 * tl_client.c - a libnkv client of a test's target (tl_client.h).
 */
#include "tl_client.h"

int tl_client_open(const char *uri, struct tl_client *cl)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 4 };
	int rc = nkv_ctrl_connect(uri, NULL, &cl->c);

	if (rc)
		return rc;
	rc = nkv_qpair_create(cl->c, &o, &cl->q);
	if (rc)
		nkv_ctrl_close(cl->c);
	return rc;
}

void tl_client_close(struct tl_client *cl)
{
	nkv_qpair_destroy(cl->q);
	nkv_ctrl_close(cl->c);
}
