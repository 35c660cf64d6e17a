/*
 * failopen.c - a test-only LD_PRELOAD interposer that makes opening one
 * file fail as it does when memory runs out: fopen and fdopen (which
 * allocate the FILE) return NULL with errno ENOMEM when the file's path
 * contains LSIM_FAIL_OPEN_MATCH. For tests/test_oom_open.sh: llmsim must
 * say "out of memory" naming the file, never "cannot open" (which sends
 * the user looking for a missing file); with LSIM_FAIL_OPEN_AFTER=N the
 * first N matching opens succeed. Global state is fine here: this
 * library is a test tool, never linked into llmsim.
 */
/* both fopen and fopen64 are defined here: not redirected one to the other */
#undef _FILE_OFFSET_BITS
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef FILE *fopen_fn(const char *, const char *);
typedef FILE *fdopen_fn(int, const char *);

FILE *fopen(const char *path, const char *mode);
FILE *fopen64(const char *path, const char *mode);
FILE *fdopen(int fd, const char *mode);

/* dlsym returns an object pointer; copy it into a function pointer. */
static void lookup(const char *name, void *fn, size_t size)
{
	void *sym = dlsym(RTLD_NEXT, name);
	memcpy(fn, &sym, size);
}

/* Matching opens seen so far: the first LSIM_FAIL_OPEN_AFTER of them (0
 * if unset) succeed, so a test can let the run id's read of a file pass
 * and fail the loader's. */
static long seen;

static int matches(const char *path)
{
	const char *m = getenv("LSIM_FAIL_OPEN_MATCH");
	if (!(m && m[0] && path && strstr(path, m)))
		return 0;
	const char *after = getenv("LSIM_FAIL_OPEN_AFTER");
	return seen++ >= (after ? atol(after) : 0);
}

static FILE *open_as(const char *name, const char *path, const char *mode)
{
	if (matches(path)) {
		errno = ENOMEM;
		return NULL;
	}
	fopen_fn *real = NULL;
	lookup(name, &real, sizeof real);
	return real ? real(path, mode) : NULL;
}

FILE *fopen(const char *path, const char *mode)
{
	return open_as("fopen", path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
	return open_as("fopen64", path, mode);
}

FILE *fdopen(int fd, const char *mode)
{
	char link[64], path[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n > 0) {
		path[n] = '\0';
		if (matches(path)) {
			errno = ENOMEM;
			return NULL;
		}
	}
	fdopen_fn *real = NULL;
	lookup("fdopen", &real, sizeof real);
	return real ? real(fd, mode) : NULL;
}
