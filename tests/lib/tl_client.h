/* SPDX-License-Identifier: MIT */
/*
 * tl_client.h - a libnkv client of a test's target: a controller and one
 * queue pair of depth 4, opened and closed together.
 */
#ifndef NKV_TEST_TL_CLIENT_H
#define NKV_TEST_TL_CLIENT_H

#include "nkv_host.h"

struct tl_client {
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
};

/* Connect to uri and create the queue pair: 0, or libnkv's negative
 * errno (nothing held then). */
int tl_client_open(const char *uri, struct tl_client *cl);
void tl_client_close(struct tl_client *cl);

#endif
