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
 *        statneg --count PATH THREADS ITERS [RATE:DIR]
 *
 * The --count form is for counting runs (kprobe hit counts per operation):
 * each thread does exactly ITERS stats that fail with ENOENT, then the
 * program prints `count-ops=TOTAL` and exits; no sampling, no timing.
 * With RATE:DIR one more thread, named "renamer" (so that a probe filtered
 * on the comm "statneg" does not count it), renames a file of its own in
 * DIR back and forth, RATE renames a second (0: as fast as it can), for as
 * long as the stat threads run; `count-renames=N` and `count-ns=NS` follow
 * on lines of their own. Every rename bumps the global rename_lock seqcount, which a lockless
 * lookup of a missing name may check (a rename load on any filesystem).
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
#include <fcntl.h>
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

/* --count RATE:DIR: the rename load. */
static const char *rename_dir;
static unsigned long rename_rate;
static _Atomic int renamer_stop;
static unsigned long long renames;

static void sleep_until(struct timespec *next);

static void *renamer(void *arg)
{
	char a[4096], b[4096];
	struct timespec next;
	long period_ns = rename_rate ? 1000000000L / (long)rename_rate : 0;
	int fd, flip = 0;

	(void)arg;
	(void)pthread_setname_np(pthread_self(), "renamer");
	snprintf(a, sizeof(a), "%s/statneg-rename-a", rename_dir);
	snprintf(b, sizeof(b), "%s/statneg-rename-b", rename_dir);
	unlink(b);
	fd = open(a, O_CREAT | O_WRONLY, 0644);
	if (fd < 0) {
		fprintf(stderr, "statneg: renamer: %s: %s\n", a, strerror(errno));
		return (void *)1;
	}
	close(fd);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!atomic_load_explicit(&renamer_stop, memory_order_relaxed)) {
		if (rename(flip ? b : a, flip ? a : b)) {
			fprintf(stderr, "statneg: renamer: rename: %s\n", strerror(errno));
			return (void *)1;
		}
		flip = !flip;
		renames++;
		if (period_ns) {
			next.tv_nsec += period_ns;
			while (next.tv_nsec >= 1000000000L) {
				next.tv_nsec -= 1000000000L;
				next.tv_sec++;
			}
			sleep_until(&next);
		}
	}
	unlink(flip ? b : a);
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

/* statneg --count PATH THREADS ITERS [RATE:DIR] */
static int count_main(int argc, char **argv)
{
	unsigned long threads, n;
	pthread_t tids[MAX_THREADS], rtid;
	unsigned long long total = 0;
	struct timespec t0, t1;
	void *rret = NULL;

	if ((argc != 5 && argc != 6) || parse_uint(argv[3], MAX_THREADS, &threads) ||
	    threads == 0 || parse_uint(argv[4], 1000000000UL, &n)) {
		fprintf(stderr, "usage: %s --count PATH THREADS ITERS [RATE:DIR] (ITERS 0..10^9)\n",
			argv[0]);
		return 2;
	}
	if (argc == 6) {
		char *colon = strchr(argv[5], ':');

		if (!colon || colon[1] == '\0') {
			fprintf(stderr, "statneg: %s: want RATE:DIR\n", argv[5]);
			return 2;
		}
		*colon = '\0';
		if (parse_uint(argv[5], 10000000UL, &rename_rate)) {
			fprintf(stderr, "statneg: %s: RATE must be 0..10^7\n", argv[5]);
			return 2;
		}
		rename_dir = colon + 1;
	}
	path = argv[2];
	if (check_missing())
		return 1;
	pin_setup();
	/* ITERS 0 still starts and joins the threads: the baseline a counting
	 * run subtracts covers start-up and exit. */
	counting = 1;
	iters = n;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rename_dir && pthread_create(&rtid, NULL, renamer, NULL)) {
		fprintf(stderr, "statneg: cannot start the renamer\n");
		return 1;
	}
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
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rename_dir) {
		atomic_store(&renamer_stop, 1);
		pthread_join(rtid, &rret);
	}
	printf("count-ops=%llu\n", total);
	if (rename_dir)
		printf("count-renames=%llu\ncount-ns=%lld\n", renames,
		       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	return rret ? 1 : 0;
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
