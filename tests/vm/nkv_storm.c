// SPDX-License-Identifier: MIT
/*
 * nkv_storm - the guest side of tests/vm/powerloss.sh: test_rocks_crash's
 * Store and Delete storm, with its ack log on a line the host records, so
 * that the guest can be killed whole (a power loss) and checked after the
 * next boot. Static, so the busybox initramfs needs nothing else.
 *
 *   nkv_storm storm SOCK LOG ROUND
 *       CLIENTS clients, each on its own connection to vfio-user:SOCK,
 *       Store (4 KiB and 2 MiB values, storm_val.h) and Delete their own
 *       KEYS keys until the target is gone. Before each command a client
 *       writes "S c k v E" to LOG, after its completion "A c k v E"
 *       (v 0: a Delete); versions are ROUND << 20 | n, so no two rounds
 *       share one.
 *   nkv_storm check SOCK HISTORY LOG
 *       HISTORY is every earlier LOG, in order. Each key must hold its
 *       last acknowledged version byte for byte, or the one in flight
 *       when the guest died, and nothing else (absent = version 0). The
 *       version found is written to LOG as "R c k v E", so the next check
 *       starts from it.
 *
 * LOG is the guest's second serial port: each line is one write(), and
 * tcdrain() waits until the UART has sent it, that is until QEMU has
 * written it to the host's file. So an "S" line is on the host before
 * its command leaves, and the host's log never misses a command that
 * could have happened. Lines cut by the kill have no newline and are
 * ignored. Exit status 0 = pass; every failure prints one "FAIL:" line.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "nkv_host.h"
#include "storm_val.h"

#define CLIENTS 3
#define KEYS 8

static struct storm_key ks[CLIENTS][KEYS];
static int log_fd = -1;
static int log_tty;
static const char *sock;

static int log_open(const char *path)
{
	struct termios t;

	log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | O_CLOEXEC, 0644);
	if (log_fd < 0) {
		printf("FAIL: open %s: %s\n", path, strerror(errno));
		return -1;
	}
	/* Raw: no \r added, nothing held back by the line discipline. */
	log_tty = !tcgetattr(log_fd, &t);
	if (log_tty) {
		cfmakeraw(&t);
		tcsetattr(log_fd, TCSANOW, &t);
	}
	return 0;
}

/* One line, whole, on the host before this returns (see the top). */
static int log_line(char op, int c, int k, uint32_t v)
{
	char l[48];
	int n = snprintf(l, sizeof(l), "%c %d %d %u E\n", op, c, k, v);

	if (write(log_fd, l, (size_t)n) != n)
		return -1;
	return log_tty ? tcdrain(log_fd) : fsync(log_fd);
}

static int connect_qp(struct nkv_ctrl **c, struct nkv_qpair **q)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 4, .slot_size = STORM_BIG };
	char uri[160];
	int rc;

	snprintf(uri, sizeof(uri), "vfio-user:%s", sock);
	rc = nkv_ctrl_connect(uri, NULL, c);
	if (rc) {
		printf("FAIL: connect %s: %s\n", uri, strerror(-rc));
		return -1;
	}
	rc = nkv_qpair_create(*c, &o, q);
	if (rc) {
		printf("FAIL: queue pair: %s\n", strerror(-rc));
		nkv_ctrl_close(*c);
		return -1;
	}
	return 0;
}

struct client {
	int id;
	unsigned seed;
	uint32_t next;	/* the next version to store */
	unsigned long acks;
};

static int client_op(struct client *cl, struct nkv_qpair *q, uint8_t *buf)
{
	int k = rand_r(&cl->seed) % KEYS, rc;
	uint32_t v = 0;
	struct nkv_result res;
	char key[16];

	storm_key_name(key, sizeof(key), cl->id, k);
	if (rand_r(&cl->seed) % 4)
		v = cl->next++;
	if (log_line('S', cl->id, k, v))
		return -1;
	if (v) {
		storm_fill(buf, cl->id, k, v);
		rc = nkv_store(q, key, (uint32_t)strlen(key), buf, storm_len(v), 0, &res);
	} else {
		rc = nkv_delete(q, key, (uint32_t)strlen(key), &res);
	}
	if (rc || (res.status && res.status != NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS))) {
		printf("storm: client %d stops: rc %d status 0x%x\n", cl->id, rc, res.status);
		return -1;
	}
	cl->acks++;
	return log_line('A', cl->id, k, v);
}

/* Storm until the target dies or the log cannot be written. */
static void *client_run(void *arg)
{
	struct client *cl = arg;
	uint8_t *buf = malloc(STORM_BIG);
	struct nkv_ctrl *c;
	struct nkv_qpair *q;

	if (!buf || connect_qp(&c, &q)) {
		free(buf);
		return NULL;
	}
	while (!client_op(cl, q, buf))
		;
	nkv_ctrl_close(c);
	free(buf);
	return NULL;
}

static int cmd_storm(const char *logp, const char *round)
{
	unsigned r = (unsigned)strtoul(round, NULL, 0), seed = (unsigned)time(NULL);
	struct client cl[CLIENTS];
	pthread_t thr[CLIENTS];
	unsigned long acks = 0;
	int i;

	if (r < 1 || r > 4095) {
		printf("FAIL: round %s: must be 1..4095\n", round);
		return 1;
	}
	if (log_open(logp))
		return 1;
	printf("storm: round %u, seed %u, %d clients x %d keys\n", r, seed, CLIENTS, KEYS);
	fflush(stdout);
	for (i = 0; i < CLIENTS; i++) {
		cl[i] = (struct client){ i, seed + (unsigned)i, r << 20 | 1, 0 };
		if (pthread_create(&thr[i], NULL, client_run, &cl[i])) {
			printf("FAIL: pthread_create\n");
			return 1;
		}
	}
	for (i = 0; i < CLIENTS; i++) {
		pthread_join(thr[i], NULL);
		acks += cl[i].acks;
	}
	printf("storm: ended after %lu completions\n", acks);
	return 0;
}

/* Replay the host's log: S sets a key's in-flight version, A acknowledges
 * it, R (an earlier check's finding) sets both. */
static int read_history(const char *path, unsigned long *acks)
{
	FILE *f = fopen(path, "r");
	char l[128], op, end;
	unsigned v;
	int c, k;

	if (!f) {
		printf("FAIL: open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(l, sizeof(l), f)) {
		if (!strchr(l, '\n') || sscanf(l, "%c %d %d %u %c", &op, &c, &k, &v, &end) != 5 ||
		    end != 'E' || c < 0 || c >= CLIENTS || k < 0 || k >= KEYS)
			continue;
		if (op == 'S') {
			ks[c][k].sent = v;
		} else if (op == 'A' && ks[c][k].sent == v) {
			ks[c][k].acked = v;
			(*acks)++;
		} else if (op == 'R') {
			ks[c][k].acked = ks[c][k].sent = v;
		}
	}
	fclose(f);
	return 0;
}

/* Counts of what the check found: [0] the acked version, [1] the one in
 * flight, [2] absent. */
static unsigned long found[3];

static int check_key(struct nkv_qpair *q, int c, int k, uint8_t *got, uint8_t *want)
{
	struct storm_key *s = &ks[c][k];
	struct nkv_result res;
	char key[16];
	int64_t v = 0;
	int rc;

	storm_key_name(key, sizeof(key), c, k);
	rc = nkv_retrieve(q, key, (uint32_t)strlen(key), got, STORM_BIG, &res);
	if (rc) {
		printf("FAIL: %s: retrieve: %s\n", key, strerror(-rc));
		return -1;
	}
	if (res.status == NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS)) {
		if (s->acked && s->sent) {
			printf("FAIL: %s: acknowledged v%u lost\n", key, s->acked);
			return -1;
		}
	} else if (res.status) {
		printf("FAIL: %s: status 0x%x\n", key, res.status);
		return -1;
	} else {
		v = storm_match(s, c, k, got, res.dw0, want);
		if (v < 0) {
			printf("FAIL: %s: a value never given, or torn (acked v%u, sent v%u, %u B)\n",
			       key, s->acked, s->sent, res.dw0);
			return -1;
		}
	}
	found[!v ? 2 : (uint32_t)v == s->acked ? 0 : 1]++;
	s->acked = s->sent = (uint32_t)v;
	return log_line('R', c, k, (uint32_t)v);
}

static int cmd_check(const char *hist, const char *logp)
{
	uint8_t *got = malloc(STORM_BIG), *want = malloc(STORM_BIG);
	unsigned long acks = 0;
	struct nkv_ctrl *ctrl;
	struct nkv_qpair *q;
	int c, k, bad = 0;

	if (!got || !want || read_history(hist, &acks) || log_open(logp) || connect_qp(&ctrl, &q))
		return 1;
	for (c = 0; c < CLIENTS; c++)
		for (k = 0; k < KEYS; k++)
			bad |= check_key(q, c, k, got, want);
	nkv_ctrl_close(ctrl);
	free(got);
	free(want);
	printf("check: %lu acknowledged completions in the log; %d keys: %lu at their acked "
	       "version, %lu at the one in flight, %lu absent\n",
	       acks, CLIENTS * KEYS, found[0], found[1], found[2]);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "storm")) {
		sock = argv[2];
		return cmd_storm(argv[3], argv[4]);
	}
	if (argc == 5 && !strcmp(argv[1], "check")) {
		sock = argv[2];
		return cmd_check(argv[3], argv[4]);
	}
	fprintf(stderr, "usage: nkv_storm storm SOCK LOG ROUND\n"
			"       nkv_storm check SOCK HISTORY LOG\n");
	return 2;
}
