/* SPDX-License-Identifier: MIT */
/*
 * uri.c - "scheme:address" to a transport. Schemes: vfio-user (a Unix
 * socket path) and pcie (/dev/nkvN or a PCI address; the transport
 * resolves addresses itself), tcp (HOST:PORT[/NQN]: a local controller
 * forwarding to a remote NVMe/TCP one, tcp_local.c).
 */
#include <errno.h>
#include <string.h>

#include "host/host.h"

static const struct nkv_transport_ops *const nkv_h_transports[] = {
	&nkv_transport_vfio_user,
	&nkv_transport_pcie,
	&nkv_transport_tcp,
};

int nkv_h_uri_parse(const char *uri, const struct nkv_transport_ops **ops,
		    const char **addr, char *err, size_t errlen)
{
	const char *colon;
	size_t n, i;

	if (!uri || !*uri) {
		nkv_h_err(err, errlen, "empty controller URI (want vfio-user:/path or pcie:/dev/nkv0)");
		return -EINVAL;
	}
	colon = strchr(uri, ':');
	if (!colon || colon == uri || !colon[1]) {
		nkv_h_err(err, errlen, "bad controller URI '%s' (want scheme:address, e.g. vfio-user:/run/nkv.sock)", uri);
		return -EINVAL;
	}
	n = (size_t)(colon - uri);
	for (i = 0; i < sizeof(nkv_h_transports) / sizeof(nkv_h_transports[0]); i++) {
		const char *name = nkv_h_transports[i]->name;

		if (strlen(name) == n && !strncmp(uri, name, n)) {
			*ops = nkv_h_transports[i];
			*addr = colon + 1;
			return 0;
		}
	}
	nkv_h_err(err, errlen, "unknown transport '%.*s' in '%s' (known: vfio-user, pcie, tcp)",
		  (int)n, uri, uri);
	return -EPROTONOSUPPORT;
}
