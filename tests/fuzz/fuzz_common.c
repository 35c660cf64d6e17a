/*
 * fuzz_common.c - the scratch folder and contract checks shared by the
 * libFuzzer targets (see fuzz_common.h). The folder's name is the only
 * state kept between inputs: libFuzzer's entry point has no context
 * argument.
 */
#define _XOPEN_SOURCE 700

#include "fuzz_common.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workload.h"

static char scratch[64];

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void remove_scratch(void)
{
	if (scratch[0])
		nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * The folder the scratch folder is made in: /dev/shm when it is there (a
 * tmpfs: writing, reading and removing an input never waits for a disk,
 * which on ext4 under a shared machine's load cost several times what the
 * reader takes), else $TMPDIR, else /tmp.
 */
static const char *scratch_parent(void)
{
	if (access("/dev/shm", W_OK | X_OK) == 0)
		return "/dev/shm";
	const char *t = getenv("TMPDIR");
	return t && t[0] && strlen(t) < 32 ? t : "/tmp";
}

const char *lsim_fuzz_dir(void)
{
	if (!scratch[0]) {
		snprintf(scratch, sizeof scratch, "%s/lsim_fuzz_XXXXXX", scratch_parent());
		if (!mkdtemp(scratch)) {
			perror("fuzz: mkdtemp");
			abort();
		}
		atexit(remove_scratch);
	}
	return scratch;
}

void lsim_fuzz_write(const char *rel, const void *data, size_t size,
		     char *path, size_t path_size)
{
	const char *dir = lsim_fuzz_dir();
	/* every folder on the way, as mkdir -p */
	for (const char *slash = strchr(rel, '/'); slash; slash = strchr(slash + 1, '/')) {
		char sub[512];
		snprintf(sub, sizeof sub, "%s/%.*s", dir, (int)(slash - rel), rel);
		if (mkdir(sub, 0700) != 0 && errno != EEXIST) {
			perror("fuzz: mkdir");
			abort();
		}
	}
	snprintf(path, path_size, "%s/%s", dir, rel);
	/*
	 * A fresh file each time, never the last one truncated: on ext4 (with
	 * its default auto_da_alloc, where /dev/shm is missing) a file that was
	 * truncated to zero and rewritten is written out to disk when it is
	 * closed, which cost each input about 2 ms of I/O wait, ten times what
	 * the reader takes. Plain write(2), not stdio: a FILE's 4 KiB buffer is
	 * one more allocation (filled by ASan) per input.
	 */
	if (unlink(path) != 0 && errno != ENOENT) {
		perror("fuzz: removing the last input");
		abort();
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror("fuzz: creating the input");
		abort();
	}
	for (size_t done = 0; done < size;) {
		ssize_t n = write(fd, (const char *)data + done, size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror("fuzz: writing the input");
			abort();
		}
		done += (size_t)n;
	}
	if (close(fd) != 0) {
		perror("fuzz: writing the input");
		abort();
	}
}

/* A per-layer table of two dense sizes, a 2 x 2 x 2 x 2 attention grid
 * and the LM head: small, so a target that needs one reads it in
 * microseconds. */
static const char valid_dense[] = "layer,tokens,time_us\n"
				  "embedding,1,1\n"
				  "embedding,100,2\n"
				  "final_layernorm,1,1\n"
				  "final_layernorm,100,1\n"
				  "layernorm,1,2\n"
				  "layernorm,100,4\n"
				  "qkv_proj,1,10\n"
				  "qkv_proj,100,109\n";

static const char valid_seq[] = "layer,sequences,time_us\n"
				"lm_head,1,100\n"
				"lm_head,10,190\n"
				"sampler,1,5\n";

static const char valid_attn[] = "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
				 "0,0,1,100,2\n"
				 "0,0,1,1000,4\n"
				 "0,0,10,100,6\n"
				 "0,0,10,1000,24\n"
				 "100,0,0,0,20\n"
				 "100,1000,0,0,40\n"
				 "100,0,1,100,22\n"
				 "100,0,1,1000,24\n"
				 "100,1000,1,100,42\n"
				 "100,1000,1,1000,44\n"
				 "100,0,10,100,26\n"
				 "100,0,10,1000,44\n"
				 "100,1000,10,100,46\n"
				 "100,1000,10,1000,64\n";

const char *const lsim_fuzz_table_files[3] = {"tp1/dense.csv", "tp1/attention.csv",
				     "tp1/per_sequence.csv"};
static const char *const valid[3] = {valid_dense, valid_attn, valid_seq};

void lsim_fuzz_write_table(const char *rel_dir, char *path, size_t path_size)
{
	char rel[512];
	for (int i = 0; i < 3; i++) {
		snprintf(rel, sizeof rel, "%s%s%s", rel_dir, rel_dir[0] ? "/" : "",
			 lsim_fuzz_table_files[i]);
		lsim_fuzz_write(rel, valid[i], strlen(valid[i]), path, path_size);
	}
	snprintf(path, path_size, "%s%s%s", lsim_fuzz_dir(), rel_dir[0] ? "/" : "", rel_dir);
}

void lsim_fuzz_check_error(int rc, const struct lsim_diag *d)
{
	if (rc >= 0) {
		fprintf(stderr, "fuzz: error return %d is not negative\n", rc);
		abort();
	}
	if (d->msg[0] == '\0') {
		fprintf(stderr, "fuzz: error %d (%s) with an empty diagnostic\n",
			rc, lsim_strerror(rc));
		abort();
	}
	if (getenv("LSIM_FUZZ_VERBOSE")) {
		char buf[1400];
		lsim_diag_format(d, buf, sizeof buf);
		fprintf(stderr, "fuzz: rejected (%s): %s\n", lsim_strerror(rc), buf);
	}
}

void lsim_fuzz_drain(struct lsim_workload *w)
{
	struct lsim_diag d;
	struct lsim_req_spec r;
	lsim_time last = 0;
	uint64_t want = 0;
	volatile uint64_t sink = 0;
	for (;;) {
		memset(&d, 0, sizeof d);
		int rc = lsim_workload_next(w, &r, &d);
		if (rc == 0)
			break;
		if (rc < 0) {
			lsim_fuzz_check_error(rc, &d);
			break;
		}
		if (rc != 1 || r.id != want || r.arrival < 0 || r.arrival < last ||
		    r.prompt_tokens < 1 || r.output_tokens < 0 || r.n_hashes < 0 ||
		    (r.n_hashes > 0 && !r.hashes)) {
			fprintf(stderr,
				"fuzz: request breaks the workload contract: rc %d id %llu "
				"(want %llu) arrival %lld (last %lld) prompt %d output %d "
				"n_hashes %d\n",
				rc, (unsigned long long)r.id, (unsigned long long)want,
				(long long)r.arrival, (long long)last, (int)r.prompt_tokens,
				(int)r.output_tokens, (int)r.n_hashes);
			abort();
		}
		for (int32_t i = 0; i < r.n_hashes; i++)
			sink += r.hashes[i]; /* ASan: every hash must be readable */
		last = r.arrival;
		want++;
	}
	(void)sink;
	if (getenv("LSIM_FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz: read %llu requests\n", (unsigned long long)want);
}
