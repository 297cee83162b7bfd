/* SPDX-License-Identifier: MIT */
/* tcp_srv.c - an in-process NVMe/TCP server for the suites (tcp_srv.h). */
#include <errno.h>

#include "tcp_srv.h"

int tcp_srv_start(struct nkv_be *be, struct nkv_tcp_server_opts *o, struct nkv_subsys **ss,
		  struct nkv_tcp_server **s, uint16_t *port)
{
	struct nkv_tcp_server_opts d = { sizeof(d) };
	int rc;

	o = o ? o : &d;
	*ss = nkv_subsys_create(NULL);
	if (!*ss) {
		be->ops->destroy(be);
		return -ENOMEM;
	}
	rc = nkv_subsys_add_ns(*ss, 1, be);
	if (rc) {
		be->ops->destroy(be);
		nkv_subsys_destroy(*ss);
		return rc;
	}
	o->ss = *ss;
	o->ctrl.size = sizeof(o->ctrl);
	*s = NULL;
	rc = nkv_tcp_server_create(o, s);
	if (!rc && (rc = nkv_tcp_server_listen(*s, NULL, 0, port)) == 0)
		rc = nkv_tcp_server_start(*s);
	if (rc) {
		nkv_tcp_server_stop(*s);
		nkv_subsys_destroy(*ss);
	}
	return rc;
}

void tcp_srv_stop(struct nkv_subsys *ss, struct nkv_tcp_server *s)
{
	nkv_tcp_server_stop(s);
	nkv_subsys_destroy(ss);
}
