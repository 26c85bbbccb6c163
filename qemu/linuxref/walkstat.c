/*
 * walkstat: one traced stat() for `make linux-walks` (qemu/linuxref/walks.sh).
 *
 *   walkstat TRACEFS ROOT PATH
 *
 * chroot(ROOT) so that PATH (e.g. /a/b/missing) walks the same components
 * as the project's own walk, puts its own pid into TRACEFS/set_ftrace_pid,
 * stats PATH twice untraced (warm: the dentries a walk leaves behind are
 * there), then turns TRACEFS/tracing_on on around exactly one stat() and off
 * again. The tracer (function_graph with set_graph_function) is set up by the
 * caller. Prints `walkstat path=PATH result=ok|ERRNO-NAME`.
 *
 * Touches: the tracing files named, ROOT (chroot, stat only).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_trace(const char *dir, const char *file)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	fd = open(p, O_WRONLY | O_TRUNC);
	if (fd < 0)
		fprintf(stderr, "walkstat: %s: %s\n", p, strerror(errno));
	return fd;
}

static int put(int fd, const char *s)
{
	return write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct stat st;
	char pid[32];
	int on, pidfd, rc, err;

	if (argc != 4) {
		fprintf(stderr, "usage: walkstat TRACEFS ROOT PATH\n");
		return 2;
	}
	/* Opened before the chroot: tracefs is outside ROOT. */
	on = open_trace(argv[1], "tracing_on");
	pidfd = open_trace(argv[1], "set_ftrace_pid");
	if (on < 0 || pidfd < 0)
		return 1;
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (put(pidfd, pid) < 0) {
		perror("walkstat: set_ftrace_pid");
		return 1;
	}
	if (chroot(argv[2]) < 0 || chdir("/") < 0) {
		perror("walkstat: chroot");
		return 1;
	}
	stat(argv[3], &st);
	stat(argv[3], &st);
	if (put(on, "1") < 0)
		return 1;
	rc = stat(argv[3], &st);
	err = errno;
	put(on, "0");
	if (rc == 0)
		printf("walkstat path=%s result=ok\n", argv[3]);
	else
		printf("walkstat path=%s result=%s\n", argv[3], strerrorname_np(err));
	return 0;
}
