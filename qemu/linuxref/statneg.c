/*
 * statneg: N threads each stat() one missing path in a loop; the main thread
 * samples the per-thread counters once a second and prints will-it-scale's
 * report format:
 *
 *   testcase:DESC
 *   warmup
 *   min:N max:N total:N          (one line per second)
 *   measurement
 *   min:N max:N total:N          (one line per second)
 *   average:N                    (mean of the measurement totals)
 *
 * Usage: statneg PATH THREADS WARMUP_SECS MEASURE_SECS
 *        statneg --count PATH THREADS ITERS
 *
 * The --count form is for counting runs (kprobe hit counts per operation):
 * each thread does exactly ITERS stats that fail with ENOENT, then the
 * program prints `count-ops=TOTAL` and exits; no sampling, no timing.
 *
 * It is the Linux reference for the project's statneg workload: built
 * statically (gcc -static -O2 -pthread) it runs inside the Linux reference
 * guest (on tmpfs and on an ext4 disk) and on the host (as statneg-host).
 * Thread i is pinned to CPU i modulo the CPUs it may run on. Every counter
 * sits on its own cache line. Exit status: 0 on success, 2 on bad arguments,
 * 1 when PATH exists (the test needs a missing name) or threads fail to start.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 1024

struct counter {
	_Atomic unsigned long long ops;
	char pad[64 - sizeof(unsigned long long)];
} __attribute__((aligned(64)));

static struct counter counters[MAX_THREADS];
static const char *path;
static _Atomic int stop;
static int cpu_list[CPU_SETSIZE];
static int ncpus_allowed;
/* --count: each thread does exactly `iters` stats (possibly none). */
static int counting;
static unsigned long long iters;

static void *worker(void *arg)
{
	long idx = (long)arg;
	struct stat st;
	unsigned long long n = 0;

	if (ncpus_allowed > 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu_list[idx % ncpus_allowed], &set);
		/* Pinning is best effort: an unpinned thread still measures. */
		(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed) && (!counting || n < iters)) {
		if (stat(path, &st) == 0 || errno != ENOENT) {
			/* Someone created the name: count nothing, keep going. */
			continue;
		}
		n++;
		atomic_store_explicit(&counters[idx].ops, n, memory_order_relaxed);
	}
	return NULL;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -1;
	*out = v;
	return 0;
}

static void sleep_until(struct timespec *next)
{
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL) == EINTR)
		;
}

/* One sampling phase: prints one line per second, returns the sum of totals. */
static unsigned long long phase(unsigned long threads, unsigned long secs,
				unsigned long long *prev, struct timespec *next)
{
	unsigned long long sum = 0;

	for (unsigned long s = 0; s < secs; s++) {
		unsigned long long min = ~0ULL, max = 0, total = 0;

		next->tv_sec += 1;
		sleep_until(next);
		for (unsigned long t = 0; t < threads; t++) {
			unsigned long long now = atomic_load_explicit(&counters[t].ops,
								     memory_order_relaxed);
			unsigned long long d = now - prev[t];
			prev[t] = now;
			if (d < min)
				min = d;
			if (d > max)
				max = d;
			total += d;
		}
		printf("min:%llu max:%llu total:%llu\n", min, max, total);
		fflush(stdout);
		sum += total;
	}
	return sum;
}

static void pin_setup(void)
{
	cpu_set_t allowed;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpu_list[ncpus_allowed++] = c;
	}
}

static int check_missing(void)
{
	struct stat st;

	if (stat(path, &st) == 0 || errno != ENOENT) {
		fprintf(stderr, "statneg: %s: must be a missing name (stat: %s)\n", path,
			errno == 0 ? "exists" : strerror(errno));
		return 1;
	}
	return 0;
}

/* statneg --count PATH THREADS ITERS */
static int count_main(int argc, char **argv)
{
	unsigned long threads, n;
	pthread_t tids[MAX_THREADS];
	unsigned long long total = 0;

	if (argc != 5 || parse_uint(argv[3], MAX_THREADS, &threads) || threads == 0 ||
	    parse_uint(argv[4], 1000000000UL, &n)) {
		fprintf(stderr, "usage: %s --count PATH THREADS ITERS (ITERS 0..10^9)\n", argv[0]);
		return 2;
	}
	path = argv[2];
	if (check_missing())
		return 1;
	pin_setup();
	/* ITERS 0 still starts and joins the threads: the baseline a counting
	 * run subtracts covers start-up and exit. */
	counting = 1;
	iters = n;
	for (unsigned long t = 0; t < threads; t++) {
		if (pthread_create(&tids[t], NULL, worker, (void *)t)) {
			fprintf(stderr, "statneg: cannot start thread %lu\n", t);
			return 1;
		}
	}
	for (unsigned long t = 0; t < threads; t++) {
		pthread_join(tids[t], NULL);
		total += atomic_load(&counters[t].ops);
	}
	printf("count-ops=%llu\n", total);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long threads, warmup, secs;
	pthread_t tids[MAX_THREADS];
	unsigned long long prev[MAX_THREADS] = { 0 };
	struct timespec next;

	if (argc >= 2 && strcmp(argv[1], "--count") == 0)
		return count_main(argc, argv);
	if (argc != 5 || parse_uint(argv[2], MAX_THREADS, &threads) || threads == 0 ||
	    parse_uint(argv[3], 3600, &warmup) || parse_uint(argv[4], 3600, &secs) || secs == 0) {
		fprintf(stderr,
			"usage: %s PATH THREADS WARMUP_SECS MEASURE_SECS\n"
			"  PATH     a name that must not exist (stat() fails with ENOENT)\n"
			"  THREADS  1..%d, thread i pinned to allowed CPU i mod count\n"
			"  WARMUP_SECS 0..3600, MEASURE_SECS 1..3600\n",
			argv[0], MAX_THREADS);
		return 2;
	}
	path = argv[1];
	if (check_missing())
		return 1;
	pin_setup();

	printf("testcase:stat() of a missing name (%s), %lu threads\n", path, threads);
	fflush(stdout);
	for (unsigned long t = 0; t < threads; t++) {
		if (pthread_create(&tids[t], NULL, worker, (void *)t)) {
			fprintf(stderr, "statneg: cannot start thread %lu\n", t);
			return 1;
		}
	}

	clock_gettime(CLOCK_MONOTONIC, &next);
	printf("warmup\n");
	fflush(stdout);
	phase(threads, warmup, prev, &next);
	printf("measurement\n");
	fflush(stdout);
	unsigned long long sum = phase(threads, secs, prev, &next);
	printf("average:%llu\n", sum / secs);
	fflush(stdout);

	atomic_store(&stop, 1);
	for (unsigned long t = 0; t < threads; t++)
		pthread_join(tids[t], NULL);
	return 0;
}
