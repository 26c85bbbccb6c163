/*
 * fidelity: the Linux half of `make fidelity` (qemu/linuxref/fidelity.sh
 * runs it in the reference guest). Two modes:
 *
 *   fidelity calib SECS
 *     The guest's system call constant: syscall(SYS_getppid) in a loop for
 *     about SECS seconds (batches of 4096 between clock reads), printed as
 *       fidelity-calib getppid_ns=NS calls=N
 *     NS is wall time per call: the syscall instruction, entry and exit work
 *     and getppid's few loads, as this QEMU runs them.
 *
 *   fidelity stat PATH THREADS WARMUP_SECS SECS
 *     statneg with the prototype driver's harness: THREADS threads, thread i
 *     pinned to allowed CPU i modulo their count, all released together by a
 *     start barrier; each calls newfstatat(AT_FDCWD, PATH, &st, 0) itself
 *     (syscall(2), so libc cannot pick statx) and checks every answer: any
 *     answer but ENOENT stops the run and is counted (wrong=N, exit 1).
 *     Each thread's counter has its own 128-byte block. Prints
 *     will-it-scale's format (testcase:, warmup, min:N max:N total:N per
 *     second, measurement, the same, average:N) and then
 *       fidelity-stat wrong=N fstype=0xMAGIC
 *     (fstype: statfs(2)'s f_type of PATH's directory: 0x1021994 tmpfs,
 *     0x858458f6 ramfs).
 *
 * Built static (gcc -static -O2 -pthread) by the host. Exit status: 0, 1 on
 * a wrong answer or a failed start, 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

struct counter {
	_Atomic unsigned long long ops;
	char pad[128 - sizeof(unsigned long long)];
} __attribute__((aligned(128)));

static struct counter counters[MAX_THREADS];
static _Atomic unsigned long long wrong;
static _Atomic int stop;
static const char *path;
static pthread_barrier_t start;
static int cpu_list[CPU_SETSIZE];
static int ncpus_allowed;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return (errno || end == s || *end || s[0] == '-' || *out > max) ? -1 : 0;
}

static int calib(unsigned long secs)
{
	unsigned long long calls = 0;
	double t0 = now_s(), t;

	do {
		for (int i = 0; i < 4096; i++)
			syscall(SYS_getppid);
		calls += 4096;
		t = now_s();
	} while (t - t0 < (double)secs);
	printf("fidelity-calib getppid_ns=%.1f calls=%llu\n", (t - t0) * 1e9 / calls, calls);
	return 0;
}

static void *worker(void *arg)
{
	long idx = (long)arg;
	struct stat st;
	unsigned long long n = 0;

	if (ncpus_allowed > 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu_list[idx % ncpus_allowed], &set);
		(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	pthread_barrier_wait(&start);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		long r = syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0);

		if (r != -1 || errno != ENOENT) {
			atomic_fetch_add(&wrong, 1);
			atomic_store(&stop, 1);
			break;
		}
		atomic_store_explicit(&counters[idx].ops, ++n, memory_order_relaxed);
	}
	return NULL;
}

static unsigned long long phase(unsigned long threads, unsigned long secs,
				unsigned long long *prev, struct timespec *next)
{
	unsigned long long sum = 0;

	for (unsigned long s = 0; s < secs; s++) {
		unsigned long long min = ~0ULL, max = 0, total = 0;

		next->tv_sec += 1;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL) == EINTR)
			;
		for (unsigned long t = 0; t < threads; t++) {
			unsigned long long v = atomic_load_explicit(&counters[t].ops,
								   memory_order_relaxed);
			unsigned long long d = v - prev[t];

			prev[t] = v;
			min = d < min ? d : min;
			max = d > max ? d : max;
			total += d;
		}
		printf("min:%llu max:%llu total:%llu\n", min, max, total);
		fflush(stdout);
		sum += total;
	}
	return sum;
}

static int stat_run(unsigned long threads, unsigned long warmup, unsigned long secs)
{
	pthread_t tids[MAX_THREADS];
	unsigned long long prev[MAX_THREADS] = { 0 };
	struct timespec next;
	struct statfs sfs;
	struct stat st;
	char dir[4096];
	cpu_set_t allowed;

	if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != -1 || errno != ENOENT) {
		fprintf(stderr, "fidelity: %s must be a missing name\n", path);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	if (statfs(dirname(dir), &sfs) != 0)
		sfs.f_type = 0;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpu_list[ncpus_allowed++] = c;
	pthread_barrier_init(&start, NULL, threads + 1);
	printf("testcase:newfstatat of a missing name (%s), %lu threads\n", path, threads);
	for (unsigned long t = 0; t < threads; t++) {
		if (pthread_create(&tids[t], NULL, worker, (void *)t)) {
			fprintf(stderr, "fidelity: cannot start thread %lu\n", t);
			return 1;
		}
	}
	pthread_barrier_wait(&start);
	clock_gettime(CLOCK_MONOTONIC, &next);
	printf("warmup\n");
	phase(threads, warmup, prev, &next);
	printf("measurement\n");
	unsigned long long sum = phase(threads, secs, prev, &next);
	printf("average:%llu\n", sum / secs);
	atomic_store(&stop, 1);
	for (unsigned long t = 0; t < threads; t++)
		pthread_join(tids[t], NULL);
	printf("fidelity-stat wrong=%llu fstype=0x%lx\n", atomic_load(&wrong),
	       (unsigned long)sfs.f_type);
	fflush(stdout);
	return atomic_load(&wrong) ? 1 : 0;
}

int main(int argc, char **argv)
{
	unsigned long threads, warmup, secs;

	if (argc == 3 && strcmp(argv[1], "calib") == 0 && parse_ulong(argv[2], 3600, &secs) == 0 &&
	    secs > 0)
		return calib(secs);
	if (argc == 6 && strcmp(argv[1], "stat") == 0 &&
	    parse_ulong(argv[3], MAX_THREADS, &threads) == 0 && threads > 0 &&
	    parse_ulong(argv[4], 3600, &warmup) == 0 && parse_ulong(argv[5], 3600, &secs) == 0 &&
	    secs > 0) {
		path = argv[2];
		return stat_run(threads, warmup, secs);
	}
	fprintf(stderr, "usage: %s calib SECS | stat PATH THREADS WARMUP_SECS SECS\n", argv[0]);
	return 2;
}
