/*
 * eack-rewind: a setxattr() between a directory's first listing and the
 * read that ends it, then a rewind, for the Linux reference guest's
 * eacache-check (qemu/linuxref/eacache-check.sh, `VARIANT:rewind`).
 *
 * Usage: eack-rewind DIR NAME ATTR VALUE
 *
 * Opens DIR; one getdents64() (FIND_FIRST: NAME listed with its EaSize);
 * setxattr(DIR/NAME, ATTR, VALUE); getdents64() until it returns 0 (the
 * FIND_NEXT that ends the search, sent after the set); lseek(fd, 0);
 * getdents64() until 0 (the first reply's entries again, from the client's
 * buffer); getxattr(DIR/NAME, ATTR). Prints one line
 *   eack-rewind set=0|1 seen=N,M got=VALUE|ERRNO-NAME stale=0|1
 * seen: how often NAME came in the first listing and after the rewind;
 * stale: the set succeeded and the read did not give VALUE back.
 * Exit status: 0, 1 on a failed open/getdents/lseek, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Big enough for the whole first reply of a small directory. */
static char buf[65536];

/* One getdents64(): the entries read (-1 on error); *seen += NAME's. */
static long one(int fd, const char *name, int *seen)
{
	long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
	long off;

	if (n < 0)
		return -1;
	for (off = 0; off < n;) {
		struct linux_dirent64 *d = (void *)(buf + off);

		if (!strcmp(d->d_name, name))
			(*seen)++;
		off += d->d_reclen;
	}
	return n;
}

int main(int argc, char **argv)
{
	char path[4096], got[256];
	int fd, set, seen1 = 0, seen2 = 0, stale;
	ssize_t g;
	long n;

	if (argc != 5)
		return 2;
	snprintf(path, sizeof(path), "%s/%s", argv[1], argv[2]);
	fd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (fd < 0 || one(fd, argv[2], &seen1) < 0) {
		printf("eack-rewind error=%s\n", strerror(errno));
		return 1;
	}
	set = setxattr(path, argv[3], argv[4], strlen(argv[4]), 0) == 0;
	do
		n = one(fd, argv[2], &seen1);
	while (n > 0);
	if (n < 0 || lseek(fd, 0, SEEK_SET) != 0) {
		printf("eack-rewind error=%s\n", strerror(errno));
		return 1;
	}
	do
		n = one(fd, argv[2], &seen2);
	while (n > 0);
	if (n < 0) {
		printf("eack-rewind error=%s\n", strerror(errno));
		return 1;
	}
	g = getxattr(path, argv[3], got, sizeof(got) - 1);
	stale = set && (g != (ssize_t)strlen(argv[4]) ||
			memcmp(got, argv[4], g));
	if (g >= 0) {
		got[g] = 0;
		printf("eack-rewind set=%d seen=%d,%d got=%s stale=%d\n", set,
		       seen1, seen2, got, stale);
	} else {
		printf("eack-rewind set=%d seen=%d,%d got=%s stale=%d\n", set,
		       seen1, seen2, strerrorname_np(errno), stale);
	}
	close(fd);
	return 0;
}
