/*
 * dcache-oracle: a stress oracle for lookups of present and missing names
 * racing with create/unlink/rename in the same directory, for the Linux
 * reference guest (a kernel with a changed ENOENT path must answer exactly
 * what an unchanged one may answer).
 *
 *   dcache-oracle DIR READERS SECS
 *
 * One writer thread churns pairs of names in DIR: create a<i>, rename a<i>
 * over b<i> (b<i> exists throughout when it existed before), exchange a<i>
 * and b<i> (both exist throughout), unlink b<i>, recreate. READERS threads
 * stat names picked at random: stable ones (p<i>, created first and never
 * touched), never-created ones (m<i>), and the churned pairs. For each name
 * the writer keeps a version (odd while a call that changes whether the
 * name exists is in flight) and whether it exists. A reader samples the
 * version before and after its stat(): when both samples are the same even
 * version, the name existed or not throughout, and the answer must be
 * exactly that (0 or ENOENT); otherwise either answer is allowed. Any other
 * errno is wrong. Names whose existence a call does not change (the rename
 * target that existed before, both names of an exchange) keep their
 * version, so a lookup that loses them in the middle of the rename is
 * caught: that is the rename_lock race. A rename or unlink of the writer's
 * that answers ENOENT for a name it knows exists is a wrong answer too; the
 * run then stops (the writer no longer knows which names exist).
 *
 * A third thread drops the unused dentries every DROP_MS milliseconds
 * (`2 > /proc/sys/vm/drop_caches`, where writable): on a filesystem whose
 * dentries are not pinned (ext4), names that exist are then missing from
 * the dcache, so a kernel that wrongly treats a dcache miss there as final
 * answers ENOENT for them. On tmpfs the positive dentries are pinned and
 * the drop changes nothing.
 *
 * Prints one line:
 *   dcache-oracle: secs=S readers=R stats=N exact=E wrong=W renames=.. drops=D
 * and up to 10 `dcache-oracle-wrong name=X expected=Y got=Z` lines before
 * it. Exits 0 when W is 0, 1 otherwise, 2 on a setup error (printed as
 * `dcache-oracle-error: …`).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define PAIRS 8
#define STABLE 16
#define MISSING 16
#define NAMES (2 * PAIRS + STABLE + MISSING)
#define MAX_REPORTS 10
#define DROP_MS 20

struct name {
	char path[256];
	_Atomic unsigned version; /* odd: existence changing */
	_Atomic int exists;
};

static struct name names[NAMES];
static _Atomic int stop;
static _Atomic unsigned long wrong, reports;
static unsigned long renames, exchanges, creates, unlinks, drops;

/* Index of a<i>, b<i>, p<i>, m<i> in names[]. */
static int a_(int i) { return i; }
static int b_(int i) { return PAIRS + i; }

static void begin_change(struct name *n)
{
	atomic_fetch_add(&n->version, 1);
}

static void end_change(struct name *n, int exists)
{
	atomic_store(&n->exists, exists);
	atomic_fetch_add(&n->version, 1);
}

static int do_create(struct name *n)
{
	begin_change(n);
	int fd = open(n->path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	end_change(n, fd >= 0 || errno == EEXIST);
	return fd >= 0 ? 0 : -errno;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "dcache-oracle-error: %s %s: %s\n", what, path, strerror(errno));
	exit(2);
}

/*
 * The writer's own call failed on a name it knows exists (a rename or
 * unlink answered ENOENT): a wrong answer of the kernel, counted and
 * reported like a reader's; the run then stops, since the writer no longer
 * knows which names exist.
 */
static int writer_wrong(const char *what, const char *path)
{
	if (errno != ENOENT)
		die(what, path);
	atomic_fetch_add(&wrong, 1);
	if (atomic_fetch_add(&reports, 1) < MAX_REPORTS)
		printf("dcache-oracle-wrong name=%s expected=present got=%s (%s by the writer)\n",
		       path, strerror(ENOENT), what);
	atomic_store(&stop, 1);
	return 1;
}

static void *writer(void *arg)
{
	unsigned seed = 12345;
	(void)arg;
	while (!atomic_load(&stop)) {
		int i = rand_r(&seed) % PAIRS;
		struct name *a = &names[a_(i)], *b = &names[b_(i)];
		int ea = atomic_load(&a->exists), eb = atomic_load(&b->exists);

		switch (rand_r(&seed) % 4) {
		case 0: /* create whichever of the pair is missing */
			if (do_create(ea ? b : a) == 0)
				creates++;
			break;
		case 1: /* rename a over b: b keeps existing if it existed */
			if (!ea)
				break;
			begin_change(a);
			if (!eb)
				begin_change(b);
			if (rename(a->path, b->path) != 0 && writer_wrong("rename", a->path))
				break;
			end_change(a, 0);
			if (!eb)
				end_change(b, 1);
			renames++;
			break;
		case 2: /* exchange: both exist throughout */
			if (!ea || !eb)
				break;
			if (syscall(SYS_renameat2, AT_FDCWD, a->path, AT_FDCWD, b->path,
				    RENAME_EXCHANGE) != 0 &&
			    writer_wrong("renameat2 exchange", a->path))
				break;
			exchanges++;
			break;
		case 3: /* unlink b */
			if (!eb)
				break;
			begin_change(b);
			if (unlink(b->path) != 0 && writer_wrong("unlink", b->path))
				break;
			end_change(b, 0);
			unlinks++;
			break;
		}
	}
	return NULL;
}

static void *dropper(void *arg)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	struct timespec ts = { 0, DROP_MS * 1000000L };

	(void)arg;
	if (fd < 0)
		return NULL;
	while (!atomic_load(&stop)) {
		if (pwrite(fd, "2\n", 2, 0) == 2)
			drops++;
		nanosleep(&ts, NULL);
	}
	close(fd);
	return NULL;
}

struct reader_result {
	unsigned long stats, exact;
};

static void *reader(void *arg)
{
	struct reader_result *r = arg;
	unsigned seed = (unsigned)(unsigned long)arg * 2654435761u;
	struct stat st;

	while (!atomic_load(&stop)) {
		struct name *n = &names[rand_r(&seed) % NAMES];
		unsigned v1 = atomic_load(&n->version);
		int exists = atomic_load(&n->exists);
		int rc = stat(n->path, &st);
		int err = rc ? errno : 0;
		unsigned v2 = atomic_load(&n->version);
		const char *bad = NULL;

		r->stats++;
		if (rc && err != ENOENT)
			bad = "an error other than ENOENT";
		else if (v1 == v2 && !(v1 & 1)) {
			r->exact++;
			if (exists && rc)
				bad = "ENOENT for a name that existed throughout";
			else if (!exists && !rc)
				bad = "success for a name that was missing throughout";
		}
		if (bad) {
			atomic_fetch_add(&wrong, 1);
			if (atomic_fetch_add(&reports, 1) < MAX_REPORTS)
				printf("dcache-oracle-wrong name=%s expected=%s got=%s (%s)\n",
				       n->path, exists ? "present" : "missing",
				       rc ? strerror(err) : "present", bad);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: dcache-oracle DIR READERS SECS\n");
		return 2;
	}
	const char *dir = argv[1];
	int nreaders = atoi(argv[2]), secs = atoi(argv[3]);
	if (nreaders < 1 || nreaders > 256 || secs < 1) {
		fprintf(stderr, "dcache-oracle: need 1..256 readers and secs >= 1\n");
		return 2;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		die("mkdir", dir);
	for (int i = 0; i < PAIRS; i++) {
		snprintf(names[a_(i)].path, sizeof(names[0].path), "%s/a%d", dir, i);
		snprintf(names[b_(i)].path, sizeof(names[0].path), "%s/b%d", dir, i);
	}
	for (int i = 0; i < STABLE; i++) {
		struct name *n = &names[2 * PAIRS + i];
		snprintf(n->path, sizeof(n->path), "%s/p%d", dir, i);
		if (do_create(n) != 0)
			die("create", n->path);
	}
	for (int i = 0; i < MISSING; i++) {
		struct name *n = &names[2 * PAIRS + STABLE + i];
		snprintf(n->path, sizeof(n->path), "%s/m%d", dir, i);
		unlink(n->path);
	}
	for (int i = 0; i < 2 * PAIRS; i++)
		unlink(names[i].path);

	pthread_t w, d, rt[256];
	struct reader_result rr[256];
	memset(rr, 0, sizeof(rr));
	pthread_create(&w, NULL, writer, NULL);
	pthread_create(&d, NULL, dropper, NULL);
	for (int i = 0; i < nreaders; i++)
		pthread_create(&rt[i], NULL, reader, &rr[i]);
	sleep(secs);
	atomic_store(&stop, 1);
	pthread_join(w, NULL);
	pthread_join(d, NULL);
	unsigned long stats = 0, exact = 0;
	for (int i = 0; i < nreaders; i++) {
		pthread_join(rt[i], NULL);
		stats += rr[i].stats;
		exact += rr[i].exact;
	}
	printf("dcache-oracle: secs=%d readers=%d stats=%lu exact=%lu wrong=%lu "
	       "creates=%lu renames=%lu exchanges=%lu unlinks=%lu drops=%lu\n",
	       secs, nreaders, stats, exact, atomic_load(&wrong), creates, renames,
	       exchanges, unlinks, drops);
	return atomic_load(&wrong) ? 1 : 0;
}
