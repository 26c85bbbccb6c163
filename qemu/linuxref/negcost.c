/*
 * negcost: what N distinct missing names stat()ed in one tmpfs directory
 * cost that directory afterwards, in the Linux reference guest (`make
 * negcost`, qemu/linuxref/negcost.sh boots it as init's worker).
 *
 * Usage: negcost DIR NAMES FILES [TRACEFS]
 *
 * Makes DIR with FILES regular files in it, stat()s NAMES distinct missing
 * names there (each must answer ENOENT), then times a full readdir of DIR
 * (getdents64 until it returns 0: what `ls -f` does; three times, the
 * fastest kept), unlinks the files and times rmdir(DIR): the directory
 * emptied after the misses. The dentry
 * count (the first field of /proc/sys/fs/dentry-state, nr_dentry) is read
 * before and after the misses. With TRACEFS, its trace is cleared and
 * tracing_on set for the readdir and the rmdir only (the caller chose the
 * tracer and its functions), then cleared again; trace_marker names each
 * step in the trace: `negcost-ls K` before the Kth readdir,
 * `negcost-unlink`, `negcost-rmdir`.
 *
 * Prints one line:
 *   negcost-guest names=N files=F stat_us=S ls_us=L ls_entries=E
 *     rmdir_us=R dentries_before=A dentries_after=B
 * (one line; CLOCK_MONOTONIC, microseconds). Exit status 0, or 1 with
 * `negcost-error WHAT: ERRNO` on stderr for the step that failed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Readdirs per run: the fastest is the figure (the others met a host busier). */
#define LS_REPS 3

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int fail(const char *what)
{
	fprintf(stderr, "negcost-error %s: %s\n", what, strerror(errno));
	return 1;
}

/* nr_dentry, the first field of /proc/sys/fs/dentry-state; -1 unread. */
static long nr_dentry(void)
{
	long n = -1;
	FILE *f = fopen("/proc/sys/fs/dentry-state", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

/* Writes S to TRACEFS/FILE; a missing TRACEFS does nothing. */
static int trace_write(const char *tracefs, const char *file, const char *s)
{
	char p[512];
	int fd, ok;

	if (!tracefs)
		return 0;
	snprintf(p, sizeof(p), "%s/%s", tracefs, file);
	fd = open(p, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	const char *dir, *tracefs;
	long names, files, i, before, after, entries = 0;
	int rep;
	double t0, stat_us, ls_us, rmdir_us;
	char path[4096];
	struct stat st;
	int fd;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: %s DIR NAMES FILES [TRACEFS]\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	names = atol(argv[2]);
	files = atol(argv[3]);
	tracefs = argc == 5 ? argv[4] : NULL;
	if (names < 0 || files < 0)
		return 2;
	if (mkdir(dir, 0755) < 0)
		return fail("mkdir");
	for (i = 0; i < files; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			return fail("create");
		close(fd);
	}

	/* The misses: names short enough for a dentry's inline name. */
	before = nr_dentry();
	t0 = now_us();
	for (i = 0; i < names; i++) {
		snprintf(path, sizeof(path), "%s/m%ld", dir, i);
		if (stat(path, &st) == 0 || errno != ENOENT) {
			if (errno == 0)
				errno = EEXIST;
			return fail("stat of a missing name");
		}
	}
	stat_us = now_us() - t0;
	after = nr_dentry();

	if (trace_write(tracefs, "trace", "") < 0 || trace_write(tracefs, "tracing_on", "1") < 0)
		return fail("tracefs");
	/* ls -f: one open, getdents64 until the end; LS_REPS times, the fastest kept. */
	ls_us = -1;
	for (rep = 1; rep <= LS_REPS; rep++) {
		char mark[64];
		double t;

		snprintf(mark, sizeof(mark), "negcost-ls %d", rep);
		if (trace_write(tracefs, "trace_marker", mark) < 0)
			return fail("trace_marker");
		entries = 0;
		t0 = now_us();
		fd = open(dir, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			return fail("open dir");
		for (;;) {
			long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
			long off = 0;

			if (n < 0)
				return fail("getdents64");
			if (n == 0)
				break;
			while (off < n) {
				unsigned short reclen;

				memcpy(&reclen, buf + off + 16, sizeof(reclen));
				entries++;
				off += reclen;
			}
		}
		close(fd);
		t = now_us() - t0;
		if (ls_us < 0 || t < ls_us)
			ls_us = t;
	}

	if (trace_write(tracefs, "trace_marker", "negcost-unlink") < 0)
		return fail("trace_marker");
	for (i = 0; i < files; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		if (unlink(path) < 0)
			return fail("unlink");
	}
	if (trace_write(tracefs, "trace_marker", "negcost-rmdir") < 0)
		return fail("trace_marker");
	t0 = now_us();
	if (rmdir(dir) < 0)
		return fail("rmdir");
	rmdir_us = now_us() - t0;
	if (trace_write(tracefs, "tracing_on", "0") < 0)
		return fail("tracefs");

	printf("negcost-guest names=%ld files=%ld stat_us=%.1f ls_us=%.1f ls_entries=%ld "
	       "rmdir_us=%.1f dentries_before=%ld dentries_after=%ld\n",
	       names, files, stat_us, ls_us, entries, rmdir_us, before, after);
	return 0;
}
