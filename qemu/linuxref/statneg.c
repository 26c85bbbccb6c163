/*
 * statneg: the Linux reference for the project's statneg workload, the one
 * harness every Linux measurement runs (the reference guest on tmpfs and on
 * an ext4 disk, the fidelity guest of `make fidelity`, the host as
 * statneg-host). N threads each call newfstatat(AT_FDCWD, PATH, &st, 0) on
 * one missing name in a loop (syscall(2), so the C library cannot pick
 * statx); the main thread samples the per-thread counters about once a
 * second and prints will-it-scale's report format, each sample's counts
 * divided by the time it really covered (the next deadline is a second
 * after the sample taken, so a late sampler never makes a short "second"
 * after a long one), as the project's own driver does:
 *
 *   testcase:DESC
 *   warmup
 *   min:N max:N total:N          (per second, one line per sample)
 *   measurement
 *   min:N max:N total:N          (per second, one line per sample)
 *   average:N                    (mean of the measurement totals)
 *   statneg-check wrong=N first=ANSWER fstype=0xMAGIC ops=N
 *
 * Usage: statneg PATH THREADS WARMUP_SECS MEASURE_SECS
 *        statneg --count PATH THREADS ITERS [RATE:DIR]
 *        statneg --calib SECS
 *
 * The harness has the prototype driver's shape: thread i is pinned to the
 * i-th CPU it may run on (modulo their count), all threads are released
 * together by a start barrier, each thread's counter has a 128-byte block
 * of its own (two cache lines: the adjacent-line prefetcher pairs lines),
 * and every answer is checked. Any answer but ENOENT (the name exists, or
 * another error) stops the run: it is counted in `wrong=`, the first one is
 * named in `first=` (`exists` or `errno:N`; `none` when all were ENOENT),
 * and the exit status is 1. `fstype=` is statfs(2)'s f_type of PATH's
 * directory (0x1021994 tmpfs, 0xef53 ext4, 0x858458f6 ramfs), so a run
 * says which filesystem answered; `ops=` the stats answered ENOENT by the
 * threads over the whole run (warm-up and the last partial second too:
 * the denominator of a counting run over the same span).
 *
 * The --count form is for counting runs (kprobe hit counts per operation):
 * each thread does exactly ITERS stats, then the program prints
 * `count-ops=TOTAL` and the `statneg-check` line and exits; no sampling,
 * no timing. With RATE:DIR one more thread, named "renamer" (so that a
 * probe filtered on the comm "statneg" does not count it), renames a file
 * of its own in DIR back and forth, RATE renames a second (0: as fast as
 * it can), for as long as the stat threads run; `count-renames=N` and
 * `count-ns=NS` follow on lines of their own. Every rename bumps the global
 * rename_lock seqcount, which a lockless lookup of a missing name may check
 * (a rename load on any filesystem).
 *
 * The --calib form measures the system call constant of `make fidelity`:
 * syscall(SYS_getppid) in a loop for about SECS seconds (batches of 4096
 * between clock reads), printed as `statneg-calib getppid_ns=NS calls=N`:
 * wall time per call, i.e. the syscall instruction, entry and exit work and
 * getppid's few loads, as this machine (or this QEMU) runs them.
 *
 * Built static (gcc -static -O2 -pthread). Exit status: 0 on success, 2 on
 * bad arguments, 1 when PATH exists at the start, an answer was wrong or
 * threads fail to start.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 1024

struct counter {
	_Atomic unsigned long long ops;
	char pad[128 - sizeof(unsigned long long)];
} __attribute__((aligned(128)));

static struct counter counters[MAX_THREADS];
static const char *path;
static _Atomic int stop;
static pthread_barrier_t start;
static int cpu_list[CPU_SETSIZE];
static int ncpus_allowed;
/* --count: each thread does exactly `iters` stats (possibly none). */
static int counting;
static unsigned long long iters;
/* Answers other than ENOENT, and the first one: 0 the name exists, else
 * its errno; -1 none yet. */
static _Atomic unsigned long long wrong;
static _Atomic int first_wrong = -1;

static long stat_once(void)
{
	struct stat st;

	return syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0);
}

/* Counts a wrong answer (r is newfstatat's result, errno its error) and
 * stops the run. */
static void note_wrong(long r)
{
	int expected = -1;

	atomic_fetch_add(&wrong, 1);
	atomic_compare_exchange_strong(&first_wrong, &expected, r == -1 ? errno : 0);
	atomic_store(&stop, 1);
}

static void *worker(void *arg)
{
	long idx = (long)arg;
	unsigned long long n = 0;

	if (ncpus_allowed > 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu_list[idx % ncpus_allowed], &set);
		/* Pinning is best effort: an unpinned thread still measures. */
		(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	pthread_barrier_wait(&start);
	while (!atomic_load_explicit(&stop, memory_order_relaxed) && (!counting || n < iters)) {
		long r = stat_once();

		if (r != -1 || errno != ENOENT) {
			note_wrong(r);
			break;
		}
		n++;
		atomic_store_explicit(&counters[idx].ops, n, memory_order_relaxed);
	}
	return NULL;
}

/* The `statneg-check` line; returns the exit status the answers call for. */
static int report_check(void)
{
	char dir[4096], first[32];
	struct statfs sfs;
	int f = atomic_load(&first_wrong);
	unsigned long long ops = 0;

	for (int t = 0; t < MAX_THREADS; t++)
		ops += atomic_load_explicit(&counters[t].ops, memory_order_relaxed);

	snprintf(dir, sizeof(dir), "%s", path);
	if (statfs(dirname(dir), &sfs) != 0)
		sfs.f_type = 0;
	if (f < 0)
		snprintf(first, sizeof(first), "none");
	else if (f == 0)
		snprintf(first, sizeof(first), "exists");
	else
		snprintf(first, sizeof(first), "errno:%d", f);
	printf("statneg-check wrong=%llu first=%s fstype=0x%lx ops=%llu\n", atomic_load(&wrong),
	       first, (unsigned long)sfs.f_type, ops);
	fflush(stdout);
	return atomic_load(&wrong) ? 1 : 0;
}

/* --count RATE:DIR: the rename load. */
static const char *rename_dir;
static unsigned long rename_rate;
static _Atomic int renamer_stop;
/* Written by the renamer on every rename: on a line of its own, away from
 * what the stat threads read on every stat. */
static struct {
	_Alignas(128) unsigned long long n; /* the struct is one whole 128-byte block */
} renames;

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
		renames.n++;
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

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void sleep_until(struct timespec *next)
{
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL) == EINTR)
		;
}

static long long ns_between(const struct timespec *a, const struct timespec *b)
{
	return (long long)(b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
}

/* Scales a count over `ns` nanoseconds to a rate per second. */
static unsigned long long per_second(unsigned long long d, long long ns)
{
	return (unsigned long long)((long double)d * 1e9L / (long double)(ns > 0 ? ns : 1));
}

/*
 * One sampling phase: one line a second, each count divided by the time its
 * sample really covered (a sampler descheduled past its deadline does not
 * make a short "second" and a long one), the next deadline a second after
 * the sample actually taken; `last` is the previous sample's time, updated.
 * Returns the sum of the per-second totals (the caller's average is their
 * mean, as the parser checks).
 */
static unsigned long long phase(unsigned long threads, unsigned long secs,
				unsigned long long *prev, struct timespec *last)
{
	unsigned long long sum = 0;

	for (unsigned long s = 0; s < secs; s++) {
		unsigned long long min = ~0ULL, max = 0, total = 0;
		struct timespec deadline = *last, now;
		long long ns;

		deadline.tv_sec += 1;
		sleep_until(&deadline);
		clock_gettime(CLOCK_MONOTONIC, &now);
		ns = ns_between(last, &now);
		*last = now;
		for (unsigned long t = 0; t < threads; t++) {
			unsigned long long c = atomic_load_explicit(&counters[t].ops,
								   memory_order_relaxed);
			unsigned long long d = per_second(c - prev[t], ns);

			prev[t] = c;
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
	long r = stat_once();

	if (r != -1 || errno != ENOENT) {
		fprintf(stderr, "statneg: %s: must be a missing name (newfstatat: %s)\n", path,
			r == 0 ? "exists" : strerror(errno));
		return 1;
	}
	return 0;
}

/* Starts `threads` workers and releases them together; 0 on success. */
static int start_workers(pthread_t *tids, unsigned long threads)
{
	if (pthread_barrier_init(&start, NULL, threads + 1)) {
		fprintf(stderr, "statneg: cannot make the start barrier\n");
		return 1;
	}
	for (unsigned long t = 0; t < threads; t++) {
		if (pthread_create(&tids[t], NULL, worker, (void *)t)) {
			fprintf(stderr, "statneg: cannot start thread %lu\n", t);
			return 1;
		}
	}
	pthread_barrier_wait(&start);
	return 0;
}

/* statneg --calib SECS */
static int calib_main(int argc, char **argv)
{
	unsigned long secs;
	unsigned long long calls = 0;
	double t0, t;

	if (argc != 3 || parse_uint(argv[2], 3600, &secs) || secs == 0) {
		fprintf(stderr, "usage: %s --calib SECS (1..3600)\n", argv[0]);
		return 2;
	}
	t0 = now_s();
	do {
		for (int i = 0; i < 4096; i++)
			syscall(SYS_getppid);
		calls += 4096;
		t = now_s();
	} while (t - t0 < (double)secs);
	printf("statneg-calib getppid_ns=%.1f calls=%llu\n", (t - t0) * 1e9 / calls, calls);
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
	int rc;

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
	if (start_workers(tids, threads))
		return 1;
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
		printf("count-renames=%llu\ncount-ns=%lld\n", renames.n,
		       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	rc = report_check();
	return rret ? 1 : rc;
}

int main(int argc, char **argv)
{
	unsigned long threads, warmup, secs;
	pthread_t tids[MAX_THREADS];
	unsigned long long prev[MAX_THREADS] = { 0 };
	struct timespec next;

	if (argc >= 2 && strcmp(argv[1], "--count") == 0)
		return count_main(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--calib") == 0)
		return calib_main(argc, argv);
	if (argc != 5 || parse_uint(argv[2], MAX_THREADS, &threads) || threads == 0 ||
	    parse_uint(argv[3], 3600, &warmup) || parse_uint(argv[4], 3600, &secs) || secs == 0) {
		fprintf(stderr,
			"usage: %s PATH THREADS WARMUP_SECS MEASURE_SECS\n"
			"       %s --count PATH THREADS ITERS [RATE:DIR]\n"
			"       %s --calib SECS\n"
			"  PATH     a name that must not exist (newfstatat fails with ENOENT)\n"
			"  THREADS  1..%d, thread i pinned to allowed CPU i mod count\n"
			"  WARMUP_SECS 0..3600, MEASURE_SECS 1..3600\n",
			argv[0], argv[0], argv[0], MAX_THREADS);
		return 2;
	}
	path = argv[1];
	if (check_missing())
		return 1;
	pin_setup();

	printf("testcase:newfstatat() of a missing name (%s), %lu threads\n", path, threads);
	fflush(stdout);
	if (start_workers(tids, threads))
		return 1;
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
	return report_check();
}
