/*
 * cached: what openat2(RESOLVE_CACHED) and an O_CREAT open answer for a
 * name missing from a directory, for the Linux reference guest's oracle
 * boot (qemu/linuxref/oracle-init.sh).
 *
 *   cached DIR...
 *
 * In a fresh subdirectory of each DIR, for a name never asked for before:
 *  - openat2(RESOLVE_CACHED) of it: EAGAIN where the lookup would have to
 *    ask the filesystem, ENOENT where the dcache alone may answer (the
 *    tmpfs-noalloc series: a miss on a complete dcache is final);
 *  - open(O_CREAT) of it must create it (a final miss must not be taken
 *    for the answer of a create), and stat() must then find it;
 *  - openat2(RESOLVE_CACHED) of the created name must succeed.
 *
 * Prints `cached: dir=DIR miss=ERRNO create=ok|ERRNO hit=ok|ERRNO` per
 * DIR (ERRNO as its symbolic name, or the number); exits 0, or 2 when a
 * DIR cannot be set up. The host judges the answers
 * (qemu/src/linuxref/oracle.rs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *errname(int e, char *buf, size_t len)
{
	switch (e) {
	case 0:
		return "ok";
	case ENOENT:
		return "ENOENT";
	case EAGAIN:
		return "EAGAIN";
	case ENOSYS:
		return "ENOSYS";
	case EINVAL:
		return "EINVAL";
	default:
		snprintf(buf, len, "%d", e);
		return buf;
	}
}

/* openat2(RESOLVE_CACHED) of PATH, read-only: 0 or the errno. */
static int open_cached(const char *path)
{
	struct open_how how = { .flags = O_RDONLY, .resolve = RESOLVE_CACHED };
	long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		char dir[512], path[600], b1[16], b2[16], b3[16];
		int miss, create = 0, hit;
		struct stat st;
		int fd;

		snprintf(dir, sizeof(dir), "%s/cached-%d", argv[i], (int)getpid());
		if (mkdir(dir, 0755)) {
			printf("cached: dir=%s mkdir %s: %s\n", argv[i], dir, strerror(errno));
			rc = 2;
			continue;
		}
		snprintf(path, sizeof(path), "%s/missing", dir);
		miss = open_cached(path);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			create = errno;
		else {
			close(fd);
			if (stat(path, &st))
				create = errno;
		}
		hit = open_cached(path);
		printf("cached: dir=%s miss=%s create=%s hit=%s\n", argv[i],
		       errname(miss, b1, sizeof(b1)), errname(create, b2, sizeof(b2)),
		       errname(hit, b3, sizeof(b3)));
	}
	return rc;
}
