/* SPDX-License-Identifier: MIT */
/*
 * process.c - the process_* series every Prometheus client library
 * exports under these names (so stock dashboards read them), from
 * /proc/self: CPU seconds, resident and virtual memory, descriptors
 * open and their limit, start time.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "target/metrics/metrics.h"

/* /proc/self/stat fields 14-15 (utime, stime), 22 (starttime), 23
 * (vsize), 24 (rss pages), past the ')' that ends comm. */
static int nkv_metrics_stat(unsigned long long v[5])
{
	char line[1024], *p;
	FILE *f = fopen("/proc/self/stat", "r");
	int n = 0;

	if (!f)
		return -1;
	p = fgets(line, sizeof(line), f);
	fclose(f);
	p = p ? strrchr(line, ')') : NULL;
	if (p)
		n = sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d "
			   "%*d %*d %*d %*d %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4]);
	return n == 5 ? 0 : -1;
}

/* Seconds since the epoch of the boot, from /proc/stat's btime. */
static double nkv_metrics_btime(void)
{
	char line[256];
	unsigned long long bt = 0;
	FILE *f = fopen("/proc/stat", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", &bt) == 1)
			break;
	if (f)
		fclose(f);
	return (double)bt;
}

static unsigned nkv_metrics_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n ? n - 1 : 0;	/* less the directory's own */
}

static void nkv_metrics_process(void *arg, struct nkv_metrics_buf *b)
{
	unsigned long long v[5];
	double tck = (double)sysconf(_SC_CLK_TCK);
	struct rlimit rl;

	(void)arg;
	if (!nkv_metrics_stat(v)) {
		nkv_metrics_family(b, "process_cpu_seconds_total", "counter",
				   "User and system CPU time spent, in seconds.");
		nkv_metrics_sample(b, "process_cpu_seconds_total", "", (double)(v[0] + v[1]) / tck);
		nkv_metrics_family(b, "process_start_time_seconds", "gauge",
				   "Start time of the process since the Unix epoch, in seconds.");
		nkv_metrics_sample(b, "process_start_time_seconds", "",
				   nkv_metrics_btime() + (double)v[2] / tck);
		nkv_metrics_family(b, "process_virtual_memory_bytes", "gauge",
				   "Virtual memory size, in bytes.");
		nkv_metrics_sample(b, "process_virtual_memory_bytes", "", (double)v[3]);
		nkv_metrics_family(b, "process_resident_memory_bytes", "gauge",
				   "Resident memory size, in bytes.");
		nkv_metrics_sample(b, "process_resident_memory_bytes", "",
				   (double)v[4] * (double)sysconf(_SC_PAGESIZE));
	}
	nkv_metrics_family(b, "process_open_fds", "gauge", "Open file descriptors.");
	nkv_metrics_sample(b, "process_open_fds", "", nkv_metrics_open_fds());
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		nkv_metrics_family(b, "process_max_fds", "gauge",
				   "The limit on open file descriptors (RLIMIT_NOFILE).");
		nkv_metrics_sample(b, "process_max_fds", "", (double)rl.rlim_cur);
	}
}

int nkv_metrics_process_register(void)
{
	return nkv_metrics_register("process", nkv_metrics_process, NULL);
}
