/* SPDX-License-Identifier: MIT */
/*
 * ceph_cluster.h - test helper: a throwaway Ceph cluster through
 * scripts/ceph-dev-cluster.sh, in a mkdtemp directory.
 */
#ifndef NKV_TEST_CEPH_CLUSTER_H
#define NKV_TEST_CEPH_CLUSTER_H

#include <stddef.h>
#include <sys/types.h>

struct nkv_test_cluster {
	char dir[256];		/* the cluster's directory */
	char conf[300];		/* dir/ceph.conf */
};

/* Start a cluster (extra: more script arguments, or NULL). Returns 0, or
 * -1 with the reason (script output tail) in why. */
int nkv_test_cluster_start(struct nkv_test_cluster *c, const char *extra,
			   char *why, size_t whylen);
/* Stop it and remove its directory. */
void nkv_test_cluster_stop(struct nkv_test_cluster *c);
/* PID of the cluster's OSD, or -1. */
pid_t nkv_test_cluster_osd_pid(const struct nkv_test_cluster *c);
/*
 * A Criterion main for suites that share one cluster: it starts one after
 * Criterion parsed its arguments (so --list or --help start nothing),
 * tells the test workers through NKV_TEST_CEPH_CONF (or, when no cluster
 * can start, NKV_TEST_CEPH_SKIP with the reason, for cr_skip_test), runs
 * the tests and stops it. name prefixes the message.
 */
int nkv_test_cluster_main(int argc, char *argv[], const char *name);

/* Run a shell command line with a time limit; returns its exit status
 * (124 on timeout), output (stdout+stderr) into out when out != NULL. */
int nkv_test_sh(int timeout_s, char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
