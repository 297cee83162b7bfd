/* SPDX-License-Identifier: MIT */
/*
 * The NVMe/TCP initiator (src/nvmf/tcp_host.h) against a real
 * nkv-target process (mem backend) and against a fake controller that
 * breaks the protocol: URIs, the host NQN, Connect with and without
 * discovery, every KV op of 1 B .. 4 MiB (in-capsule, R2T, C2HData),
 * keys 1..255, digests, many commands in flight, Keep Alive, a remote
 * gone, killed or stopped (an error in bounded time, never a hang), a
 * wrong CID and a C2HData outside its buffer (the association ended).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>

#include "nvmf/tcp_host.h"
#include "nvme-tcp/pdu.h"
#include "tgt_proc.h"

#define SUBNQN "nqn.2026-01.io.nkv:target"

static struct tgt_proc P;
static char LOG[8192];

static void t_log(void *ctx, const char *line)
{
	size_t n = strlen(LOG);

	(void)ctx;
	snprintf(LOG + n, sizeof(LOG) - n, "%s\n", line);
}

static struct nkv_nvmf_opts opts(uint32_t timeout_ms)
{
	struct nkv_nvmf_opts o = { .size = sizeof(o), .timeout_ms = timeout_ms, .log = t_log };

	LOG[0] = 0;
	return o;
}

static void start(void)
{
	static const char *const args[] = { "--backend", "mem", "--capacity", "256M",
					    "--max-value", "8M", NULL };

	cr_assert_eq(tgt_proc_start(&P, 0, args), 0, "nkv-target started and listens");
}

static void stop(void)
{
	tgt_proc_free(&P);
}

static struct nkv_nvmf_addr addr(const char *nqn)
{
	struct nkv_nvmf_addr a = { .port = P.port };

	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	snprintf(a.nqn, sizeof(a.nqn), "%s", nqn);
	return a;
}

Test(nvmf_uri, forms)
{
	struct nkv_nvmf_addr a;
	char err[256];

	cr_assert_eq(nkv_nvmf_uri_parse("tcp:127.0.0.1:4420", &a, err, sizeof(err)), 0);
	cr_assert_str_eq(a.host, "127.0.0.1");
	cr_assert_eq(a.port, 4420);
	cr_assert_str_eq(a.nqn, "");
	cr_assert_eq(nkv_nvmf_uri_parse("tcp:[::1]:9/nqn.x:y", &a, err, sizeof(err)), 0);
	cr_assert_str_eq(a.host, "::1");
	cr_assert_eq(a.port, 9);
	cr_assert_str_eq(a.nqn, "nqn.x:y");
	cr_assert_eq(nkv_nvmf_uri_parse("tcp:host", &a, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "port"));
	cr_assert_eq(nkv_nvmf_uri_parse("tcp:h:0", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(nkv_nvmf_uri_parse("tcp:h:70000", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(nkv_nvmf_uri_parse("tcp:h:1/", &a, err, sizeof(err)), -EINVAL);
	cr_assert_eq(nkv_nvmf_uri_parse("vfio-user:/x", &a, err, sizeof(err)), -EINVAL);
}

Test(nvmf_uri, default_hostnqn_is_stable)
{
	char a[256], b[256];

	nkv_nvmf_default_hostnqn(a, sizeof(a));
	nkv_nvmf_default_hostnqn(b, sizeof(b));
	cr_assert_str_eq(a, b);
	cr_assert_eq(strncmp(a, "nqn.2014-08.org.nvmexpress:uuid:", 32), 0);
	cr_assert_eq(strlen(a), 32 + 36);
}

static uint16_t kv(struct nkv_nvmf_assoc *as, uint8_t opc, const uint8_t *key, uint32_t klen,
		   uint8_t *data, uint32_t len, uint32_t *dw0, uint32_t *got)
{
	uint8_t head[NKV_KEY_HEAD_MAX];
	struct nkv_nvmf_cmd c;

	cr_assert_eq(nkv_nvmf_kv_prep(&c, nkv_nvmf_q_icd_max(as->io), opc, 1, key, klen, head,
				      data, len, 0, 0), 0);
	cr_assert_eq(nkv_nvmf_q_exec(as->io, &c), 0, "opc %#x: %s", opc, LOG);
	if (dw0)
		*dw0 = c.cqe.dw0;
	if (got)
		*got = c.got;
	return nkv_nvmf_status(&c);
}

/* Store, Retrieve (every byte), Exist, Delete, Exist again. */
static void roundtrip(struct nkv_nvmf_assoc *as, const uint8_t *key, uint32_t klen, uint32_t len)
{
	uint8_t *v = malloc(len + NKV_KEY_HEAD_MAX), *r = malloc(len);
	uint32_t i, dw0 = 0, got = 0;

	for (i = 0; i < len; i++)
		v[NKV_KEY_HEAD_MAX + i] = (uint8_t)(i * 7 + klen);
	cr_assert_eq(kv(as, NKV_KV_STORE, key, klen, v + NKV_KEY_HEAD_MAX, len, NULL, NULL), 0,
		     "store klen %u len %u", klen, len);
	memset(r, 0, len);
	cr_assert_eq(kv(as, NKV_KV_RETRIEVE, key, klen, r, len, &dw0, &got), 0);
	cr_assert_eq(dw0, len);
	cr_assert_eq(got, len);
	cr_assert_eq(memcmp(r, v + NKV_KEY_HEAD_MAX, len), 0, "klen %u len %u", klen, len);
	cr_assert_eq(kv(as, NKV_KV_EXIST, key, klen, NULL, 0, NULL, NULL), 0);
	cr_assert_eq(kv(as, NKV_KV_DELETE, key, klen, NULL, 0, NULL, NULL), 0);
	cr_assert_eq(kv(as, NKV_KV_EXIST, key, klen, NULL, 0, NULL, NULL) & 0x7ff,
		     NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS));
	free(v);
	free(r);
}

static void sizes(int hdgst, int ddgst, const char *nqn)
{
	static const uint32_t len[] = { 1, 100, 4096, 16320, 16321, 65536, 1u << 20, 4u << 20 };
	struct nkv_nvmf_opts o = opts(5000);
	struct nkv_nvmf_addr a = addr(nqn);
	struct nkv_nvmf_assoc as;
	uint8_t key[255];
	uint32_t i;

	o.hdgst = hdgst;
	o.ddgst = ddgst;
	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i + 1);
	cr_assert_eq(nkv_nvmf_assoc_open(&as, &a, &o), 0, "%s", LOG);
	cr_assert_str_eq(as.subnqn, SUBNQN);
	cr_assert_gt(nkv_nvmf_q_icd_max(as.io), 4096);
	for (i = 0; i < sizeof(len) / sizeof(len[0]); i++)
		roundtrip(&as, key, 8, len[i]);
	for (i = 1; i <= 255; i += 17)
		roundtrip(&as, key, i, 300);
	roundtrip(&as, key, 255, 1u << 20);
	cr_assert_eq(nkv_nvmf_assoc_keep_alive(&as), 0);
	nkv_nvmf_assoc_close(&as);
}

Test(nvmf_tcp, every_op_and_size, .init = start, .fini = stop, .timeout = 120)
{
	sizes(0, 0, SUBNQN);
}

Test(nvmf_tcp, digests_and_discovery, .init = start, .fini = stop, .timeout = 120)
{
	sizes(1, 1, "");
}

Test(nvmf_tcp, many_in_flight, .init = start, .fini = stop, .timeout = 60)
{
	struct nkv_nvmf_opts o = opts(5000);
	struct nkv_nvmf_addr a = addr(SUBNQN);
	static uint8_t val[16][8192 + NKV_KEY_HEAD_MAX], out[16][8192];
	static uint8_t head[16][NKV_KEY_HEAD_MAX];
	struct nkv_nvmf_cmd c[16];
	struct nkv_nvmf_assoc as;
	uint8_t key[32];
	int i, done;

	cr_assert_eq(nkv_nvmf_assoc_open(&as, &a, &o), 0, "%s", LOG);
	/* The Stores held back and sent together (nkv_nvmf_q_cork), as the
	 * forwarding backend sends a batch. */
	nkv_nvmf_q_cork(as.io, 1);
	for (i = 0; i < 16; i++) {
		memset(key, i, sizeof(key));
		memset(val[i], 0x40 + i, sizeof(val[i]));
		cr_assert_eq(nkv_nvmf_kv_prep(&c[i], nkv_nvmf_q_icd_max(as.io), NKV_KV_STORE, 1,
					      key, 20 + (uint32_t)i % 2 * 4, head[i],
					      val[i] + NKV_KEY_HEAD_MAX, 8192, 0, 0), 0);
		cr_assert_eq(nkv_nvmf_q_submit(as.io, &c[i]), 0);
	}
	nkv_nvmf_q_cork(as.io, 0);
	for (done = 0; done < 16;) {
		int n = nkv_nvmf_q_reap(as.io);

		cr_assert_gt(n, 0);
		done += n;
	}
	for (i = 0; i < 16; i++) {
		cr_assert(c[i].done);
		cr_assert_eq(nkv_nvmf_status(&c[i]), 0);
		memset(key, i, sizeof(key));
		nkv_nvmf_kv_prep(&c[i], 0, NKV_KV_RETRIEVE, 1, key, 20 + (uint32_t)i % 2 * 4,
				 head[i], out[i], 8192, 0, 0);
		cr_assert_eq(nkv_nvmf_q_submit(as.io, &c[i]), 0);
	}
	for (done = 0; done < 16;)
		done += nkv_nvmf_q_reap(as.io);
	for (i = 0; i < 16; i++) {
		cr_assert_eq(nkv_nvmf_status(&c[i]), 0);
		cr_assert_eq(memcmp(out[i], val[i] + NKV_KEY_HEAD_MAX, 8192), 0);
	}
	nkv_nvmf_assoc_close(&as);
}

/* KATO 1 s: Keep Alive every half of it keeps the association; none
 * for 2.5 s and the target ends it (the next command fails, no hang). */
Test(nvmf_tcp, keep_alive_at_half_the_kato, .init = start, .fini = stop, .timeout = 30)
{
	struct nkv_nvmf_opts o = opts(2000);
	struct nkv_nvmf_addr a = addr(SUBNQN);
	struct nkv_nvmf_assoc as, idle;
	uint8_t buf[8], head[NKV_KEY_HEAD_MAX];
	struct nkv_nvmf_cmd c;
	uint64_t end;
	int sent = 0;

	o.kato_ms = 1000;
	cr_assert_eq(nkv_nvmf_assoc_open(&as, &a, &o), 0, "%s", LOG);
	cr_assert_eq(nkv_nvmf_assoc_open(&idle, &a, &o), 0, "%s", LOG);
	for (end = nkv_nvmf_now_ms() + 2500; nkv_nvmf_now_ms() < end; usleep(20000))
		if (nkv_nvmf_assoc_ka_due(&as)) {
			cr_assert_eq(nkv_nvmf_assoc_keep_alive(&as), 0);
			sent++;
		}
	cr_assert_geq(sent, 4, "every 500 ms: %d", sent);
	nkv_nvmf_kv_prep(&c, 0, NKV_KV_EXIST, 1, (const uint8_t *)"k", 1, head, buf, 0, 0, 0);
	cr_assert_eq(nkv_nvmf_q_exec(as.io, &c), 0, "kept alive");
	nkv_nvmf_kv_prep(&c, 0, NKV_KV_EXIST, 1, (const uint8_t *)"k", 1, head, buf, 0, 0, 0);
	cr_assert_lt(nkv_nvmf_q_exec(idle.io, &c), 0, "the target ended the idle one");
	nkv_nvmf_assoc_close(&idle);
	nkv_nvmf_assoc_close(&as);
}

Test(nvmf_tcp, nobody_listening)
{
	struct nkv_nvmf_opts o = opts(2000);
	struct nkv_nvmf_addr a = { .port = 1 };
	struct nkv_nvmf_assoc as;

	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	cr_assert_eq(nkv_nvmf_assoc_open(&as, &a, &o), -ECONNREFUSED);
	cr_assert(strstr(LOG, "event=nvmf_connect_failed"), "%s", LOG);
}

Test(nvmf_tcp, remote_killed, .init = start, .fini = stop, .timeout = 30)
{
	struct nkv_nvmf_opts o = opts(2000);
	struct nkv_nvmf_addr a = addr(SUBNQN);
	struct nkv_nvmf_assoc as;
	uint8_t buf[64];
	struct nkv_nvmf_cmd c;
	uint8_t head[NKV_KEY_HEAD_MAX];
	int rc;

	cr_assert_eq(nkv_nvmf_assoc_open(&as, &a, &o), 0, "%s", LOG);
	tgt_proc_kill(&P);
	nkv_nvmf_kv_prep(&c, 0, NKV_KV_RETRIEVE, 1, (const uint8_t *)"k", 1, head, buf, 64, 0, 0);
	rc = nkv_nvmf_q_exec(as.io, &c);
	cr_assert(rc == -ECONNRESET || rc == -EPIPE, "rc %d", rc);
	cr_assert_eq(nkv_nvmf_q_error(as.io), rc);
	cr_assert(strstr(LOG, "event=nvmf_assoc_end"), "%s", LOG);
	nkv_nvmf_assoc_close(&as);
}

/* SIGSTOP pid and wait until it is stopped (state T in /proc). */
static void stop_proc(pid_t pid)
{
	char path[64], st[512];
	int i;

	kill(pid, SIGSTOP);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (i = 0; i < 500; i++) {
		FILE *f = fopen(path, "re");
		char *p = f && fgets(st, sizeof(st), f) ? strrchr(st, ')') : NULL;

		if (f)
			fclose(f);
		if (p && p[2] == 'T')
			return;
		usleep(2000);
	}
	cr_assert_fail("process %d did not stop", (int)pid);
}

Test(nvmf_tcp, remote_stopped, .init = start, .fini = stop, .timeout = 30)
{
	struct nkv_nvmf_opts o = opts(1000);
	struct nkv_nvmf_addr a = addr(SUBNQN);
	struct nkv_nvmf_assoc as;
	uint8_t buf[64], head[NKV_KEY_HEAD_MAX];
	struct nkv_nvmf_cmd c;
	uint64_t t0;

	cr_assert_eq(nkv_nvmf_assoc_open(&as, &a, &o), 0, "%s", LOG);
	stop_proc(P.pid);
	t0 = nkv_nvmf_now_ms();
	nkv_nvmf_kv_prep(&c, 0, NKV_KV_RETRIEVE, 1, (const uint8_t *)"k", 1, head, buf, 64, 0, 0);
	cr_assert_eq(nkv_nvmf_q_exec(as.io, &c), -ETIMEDOUT);
	cr_assert_lt(nkv_nvmf_now_ms() - t0, 5000, "bounded by the timeout (twice at most)");
	cr_assert(strstr(LOG, "event=nvmf_timeout"), "%s", LOG);
	cr_assert_eq(nkv_nvmf_assoc_keep_alive(&as), -ETIMEDOUT);
	nkv_nvmf_assoc_close(&as);
	kill(P.pid, SIGCONT);
}

/* A fake controller: ICResp, then answers the first command (Connect)
 * as the test's mode says. */
enum fake_mode { FAKE_WRONG_CID, FAKE_C2H_OUTSIDE };
struct fake {
	int lfd;
	uint16_t port;
	enum fake_mode mode;
	int got_term;		/* an H2CTermReq came back */
	pthread_t th;
};

static void fake_send_rsp(int fd, uint16_t cid, uint32_t dw0)
{
	struct nkv_tcp_rsp r;

	memset(&r, 0, sizeof(r));
	nkv_tcp_ch_init(&r.ch, NKV_TCP_RSP, 0, sizeof(r), 0, sizeof(r));
	r.cqe.dw0 = dw0;
	r.cqe.dw3 = cid;
	send(fd, &r, sizeof(r), MSG_NOSIGNAL);
}

static int fake_read_cmd(int fd, struct nkv_tcp_cmd *cmd)
{
	uint8_t buf[2048];

	if (recv(fd, cmd, 8, MSG_WAITALL) != 8 || cmd->ch.plen > sizeof(buf) + 8)
		return -1;
	if (recv(fd, buf, cmd->ch.plen - 8, MSG_WAITALL) != (ssize_t)(cmd->ch.plen - 8))
		return -1;
	memcpy((uint8_t *)cmd + 8, buf, sizeof(*cmd) - 8);
	return 0;
}

static void *fake_run(void *arg)
{
	struct fake *f = arg;
	struct nkv_tcp_icresp ic;
	struct nkv_tcp_cmd cmd;
	struct nkv_tcp_data d;
	uint8_t buf[256];
	int fd = accept(f->lfd, NULL, NULL);

	recv(fd, buf, 128, MSG_WAITALL);
	memset(&ic, 0, sizeof(ic));
	nkv_tcp_ch_init(&ic.ch, NKV_TCP_ICRESP, 0, 128, 0, 128);
	ic.maxh2cdata = 65536;
	send(fd, &ic, sizeof(ic), MSG_NOSIGNAL);
	if (fake_read_cmd(fd, &cmd) == 0) {
		uint16_t cid = (uint16_t)(cmd.sqe.cdw0 >> 16);

		if (f->mode == FAKE_WRONG_CID) {
			fake_send_rsp(fd, (uint16_t)(cid + 77), 1);
		} else {
			fake_send_rsp(fd, cid, 1);	/* Connect ok; then Identify */
			if (fake_read_cmd(fd, &cmd) == 0) {
				memset(&d, 0, sizeof(d));
				nkv_tcp_ch_init(&d.ch, NKV_TCP_C2H_DATA, 0, 24, 24, 24 + 200);
				d.cccid = (uint16_t)(cmd.sqe.cdw0 >> 16);
				d.datao = 0;
				d.datal = 200;
				d.datao = 4000;	/* 4000 + 200 > the 4096-byte buffer */
				send(fd, &d, sizeof(d), MSG_NOSIGNAL);
				send(fd, buf, 200, MSG_NOSIGNAL);
			}
		}
	}
	if (recv(fd, buf, 8, MSG_WAITALL) == 8 && buf[0] == NKV_TCP_H2C_TERM)
		f->got_term = 1;
	close(fd);
	return NULL;
}

static void fake_start(struct fake *f, enum fake_mode m)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->mode = m;
	f->got_term = 0;
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(f->lfd, 1), 0);
	getsockname(f->lfd, (struct sockaddr *)&a, &al);
	f->port = ntohs(a.sin_port);
	pthread_create(&f->th, NULL, fake_run, f);
}

static void fake_end(struct fake *f)
{
	pthread_join(f->th, NULL);
	close(f->lfd);
}

Test(nvmf_hostile, wrong_cid, .timeout = 20)
{
	struct nkv_nvmf_opts o = opts(2000);
	struct nkv_nvmf_addr a = { 0 };
	struct nkv_nvmf_q *q;
	struct fake f;

	fake_start(&f, FAKE_WRONG_CID);
	a.port = f.port;
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	cr_assert_eq(nkv_nvmf_q_open(&a, SUBNQN, 0, 0, &o, &q, NULL), -EPROTO);
	fake_end(&f);
	cr_assert(f.got_term, "an H2CTermReq told the controller why");
	cr_assert(strstr(LOG, "why=rsp_unknown_cid"), "%s", LOG);
}

Test(nvmf_hostile, c2h_outside_buffer, .timeout = 20)
{
	struct nkv_nvmf_opts o = opts(2000);
	struct nkv_nvmf_addr a = { 0 };
	struct nkv_nvmf_q *q;
	uint8_t *id = malloc(4096);
	struct fake f;

	fake_start(&f, FAKE_C2H_OUTSIDE);
	a.port = f.port;
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	cr_assert_eq(nkv_nvmf_q_open(&a, SUBNQN, 0, 0, &o, &q, NULL), 0, "%s", LOG);
	cr_assert_eq(nkv_nvmf_identify(q, NKV_CNS_CTRL, 0, 0, id, NULL), -EPROTO);
	cr_assert_eq(nkv_nvmf_q_error(q), -EPROTO);
	nkv_nvmf_q_close(q);
	fake_end(&f);
	cr_assert(f.got_term);
	cr_assert(strstr(LOG, "why=c2h_outside_buffer"), "%s", LOG);
	free(id);
}
