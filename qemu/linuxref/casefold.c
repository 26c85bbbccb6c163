/*
 * casefold: what a tmpfs mounted with case folding must still answer, for
 * the Linux reference guest. The 7.3 series leave case folding alone
 * (noalloc takes no miss as final under a parent with ->d_hash or
 * ->d_compare, which a casefold mount's dentries all have; negative hashes
 * no negative dentry in a casefolded directory); this checks the answers a
 * user sees, on every kernel alike.
 *
 *   casefold DIR        (DIR: a tmpfs mounted with -o casefold)
 *
 * In DIR/ci (made casefolded with FS_IOC_SETFLAGS) and DIR/cs (not):
 *  - a missing name is ENOENT, asked twice (the second may be answered
 *    from whatever the first left in the dcache);
 *  - after creating "Name", every spelling of it is found in ci and only
 *    the exact one in cs;
 *  - a name first asked for in one spelling ("other", ENOENT) and then
 *    created in another ("OTHER") is listed by readdir as created: a
 *    negative dentry of the first spelling must not lend it its name;
 *  - after unlink, every spelling is ENOENT again.
 *
 * Prints `casefold: checks=N wrong=W` (and a `casefold-wrong ...` line per
 * wrong answer before it); exits 0 when W is 0, 1 otherwise, 2 when DIR
 * cannot be set up (no case folding in this kernel or mount).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static int checks, wrong;

static void expect_stat(const char *dir, const char *name, int want)
{
	char path[512];
	struct stat st;
	int got;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	got = stat(path, &st) == 0 ? 0 : errno;
	checks++;
	if (got != want) {
		wrong++;
		printf("casefold-wrong stat %s expected=%s got=%s\n", path,
		       want ? strerror(want) : "0", got ? strerror(got) : "0");
	}
}

static void create(const char *dir, const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	if (fd < 0) {
		printf("casefold-wrong create %s: %s\n", path, strerror(errno));
		wrong++;
		return;
	}
	close(fd);
}

static void remove_name(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (unlink(path)) {
		printf("casefold-wrong unlink %s: %s\n", path, strerror(errno));
		wrong++;
	}
}

/* readdir of DIR lists NAME exactly as spelled. */
static void expect_listed(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	checks++;
	if (!d) {
		printf("casefold-wrong opendir %s: %s\n", dir, strerror(errno));
		wrong++;
		return;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, name) == 0)
			found = 1;
	closedir(d);
	if (!found) {
		wrong++;
		printf("casefold-wrong readdir %s: %s not listed as created\n",
		       dir, name);
	}
}

int main(int argc, char **argv)
{
	char ci[256], cs[256];
	int fd, flags;

	if (argc != 2) {
		fprintf(stderr, "usage: casefold DIR\n");
		return 2;
	}
	snprintf(ci, sizeof(ci), "%s/ci", argv[1]);
	snprintf(cs, sizeof(cs), "%s/cs", argv[1]);
	if (mkdir(ci, 0755) || mkdir(cs, 0755)) {
		perror("casefold: mkdir");
		return 2;
	}
	fd = open(ci, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags)) {
		perror("casefold: FS_IOC_GETFLAGS");
		return 2;
	}
	flags |= FS_CASEFOLD_FL;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags)) {
		perror("casefold: FS_IOC_SETFLAGS +F");
		return 2;
	}
	close(fd);

	for (int pass = 0; pass < 2; pass++) {
		expect_stat(ci, "name", ENOENT);
		expect_stat(cs, "name", ENOENT);
	}
	create(ci, "Name");
	create(cs, "Name");
	expect_stat(ci, "Name", 0);
	expect_stat(ci, "name", 0);
	expect_stat(ci, "NAME", 0);
	expect_stat(cs, "Name", 0);
	expect_stat(cs, "name", ENOENT);
	expect_stat(cs, "NAME", ENOENT);

	expect_stat(ci, "other", ENOENT);
	expect_stat(ci, "other", ENOENT);
	create(ci, "OTHER");
	expect_stat(ci, "other", 0);
	expect_listed(ci, "OTHER");

	remove_name(ci, "Name");
	remove_name(ci, "OTHER");
	expect_stat(ci, "name", ENOENT);
	expect_stat(ci, "Name", ENOENT);
	expect_stat(ci, "other", ENOENT);
	expect_stat(ci, "OTHER", ENOENT);

	printf("casefold: checks=%d wrong=%d\n", checks, wrong);
	return wrong ? 1 : 0;
}
