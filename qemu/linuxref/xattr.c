/*
 * xattr: lists or sets extended attributes without following symlinks, for
 * the Linux reference guest (busybox has no getfattr). What `getfattr -d`
 * shows, on one line, so the host can parse it from the console.
 *
 * Usage: xattr list PATH          prints `xattr-list path=PATH n=N NAME=VALUE...`
 *        xattr set PATH NAME VALUE
 * Values print as text when printable, else as 0x followed by hex.
 * Exit status: 0, 1 on a failed call (its errno is printed), 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

static void print_value(const unsigned char *v, ssize_t n)
{
	ssize_t i;
	int text = n > 0;

	for (i = 0; i < n; i++)
		if (v[i] < 0x21 || v[i] > 0x7e)
			text = 0;
	if (text) {
		fwrite(v, 1, n, stdout);
		return;
	}
	printf("0x");
	for (i = 0; i < n; i++)
		printf("%02x", v[i]);
}

static int list(const char *path)
{
	static char names[65536];
	static unsigned char value[65536];
	ssize_t len, n, off;
	int count = 0;

	len = llistxattr(path, names, sizeof(names));
	if (len < 0) {
		printf("xattr-list path=%s error=%s\n", path, strerror(errno));
		return 1;
	}
	for (off = 0; off < len; off += strlen(names + off) + 1)
		count++;
	printf("xattr-list path=%s n=%d", path, count);
	for (off = 0; off < len; off += strlen(names + off) + 1) {
		n = lgetxattr(path, names + off, value, sizeof(value));
		printf(" %s=", names + off);
		if (n < 0)
			printf("(%s)", strerror(errno));
		else
			print_value(value, n);
	}
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "list") == 0)
		return list(argv[2]);
	if (argc == 5 && strcmp(argv[1], "set") == 0) {
		if (lsetxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0) < 0) {
			printf("xattr-set path=%s error=%s\n", argv[2], strerror(errno));
			return 1;
		}
		return 0;
	}
	fprintf(stderr, "usage: %s list PATH | set PATH NAME VALUE\n", argv[0]);
	return 2;
}
