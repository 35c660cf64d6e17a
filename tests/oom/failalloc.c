/*
 * failalloc.c - a test-only LD_PRELOAD interposer that makes one
 * allocation of llmsim's own code fail and counts the blocks that code
 * leaves allocated, for the out-of-memory test (tests/test_oom.sh,
 * docs/reliability.md "Out of memory").
 *
 * It interposes malloc, calloc, realloc, reallocarray, strdup, strndup,
 * aligned_alloc, memalign and posix_memalign, and counts a call only when
 * it comes from the main executable (the return address lies in one of
 * its executable segments, found once with dl_iterate_phdr). libllmsim is
 * a static library linked into the llmsim executable, so that is exactly
 * llmsim's code; allocations made inside libc, HDF5, libyaml, SQLite,
 * json-c or GSL are never counted nor failed: their recovery is not ours
 * to fix, and valgrind (run by the test on a sample) covers what we fail
 * to release of theirs. Environment:
 *
 *   LSIM_FAIL_ALLOC_AT=N     the Nth counted allocation (from 1) returns
 *                            NULL with errno ENOMEM; the others succeed
 *   LSIM_FAIL_ALLOC_COUNT=1  print "failalloc: count=T live=L fail_at=N"
 *                            to stderr at exit: T counted allocations, L
 *                            of their blocks never freed (a leak when
 *                            llmsim frees everything, as it does)
 *   LSIM_FAIL_ALLOC_TRACE=1  print the executable offset of the failed
 *                            call (for addr2line -e llmsim -f -i OFFSET-1)
 *   LSIM_FAIL_ALLOC_LOG=FILE write "N OFFSET" for every counted allocation
 *                            to FILE: its call sites, for choosing N
 *   LSIM_FAIL_ALLOC_PROG     the program it acts in (default llmsim); in
 *                            any other (valgrind's launcher, a shell) it
 *                            only passes calls through
 *
 * The real functions come from dlsym(RTLD_NEXT). glibc's dlsym may itself
 * call malloc or calloc (its dlerror buffer); while a lookup is under way
 * those calls are served from a small static arena, which free ignores
 * and realloc moves to the heap. Global state is fine here: this library
 * is a test tool, never linked into llmsim.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *malloc_fn(size_t);
typedef void *calloc_fn(size_t, size_t);
typedef void *realloc_fn(void *, size_t);
typedef void free_fn(void *);
typedef void *aligned_alloc_fn(size_t, size_t);
typedef int posix_memalign_fn(void **, size_t, size_t);

static malloc_fn *real_malloc;
static calloc_fn *real_calloc;
static realloc_fn *real_realloc;
static free_fn *real_free;
static aligned_alloc_fn *real_aligned_alloc;
static aligned_alloc_fn *real_memalign;
static posix_memalign_fn *real_posix_memalign;

/* Allocations made while dlsym runs (never freed back to the heap). */
static _Alignas(max_align_t) unsigned char arena[16384];
static size_t arena_used;
static int resolving;

/* The main executable's executable segments; none: not the program. */
#define MAX_SEGS 8
static uintptr_t seg_lo[MAX_SEGS], seg_hi[MAX_SEGS], exe_base;
static int n_segs;

static unsigned long long fail_at; /* 0: never fail */
static unsigned long long counted;
static bool print_count, trace;
static int log_fd = -1;

/* The live blocks of counted allocations: an open-addressing set of
 * addresses (0 empty, 1 deleted) under a spin lock. */
static uintptr_t *live;
static size_t live_cap, live_n, live_used;
static volatile char live_lock;

enum origin { FOREIGN, OURS, OURS_FAIL };

static bool in_arena(const void *p)
{
	return (const unsigned char *)p >= arena &&
	       (const unsigned char *)p < arena + sizeof arena;
}

static void *arena_alloc(size_t n)
{
	size_t a = _Alignof(max_align_t);
	size_t start = (arena_used + a - 1) / a * a;
	if (n > sizeof arena - start)
		return NULL;
	arena_used = start + n;
	return arena + start;
}

/* dlsym returns an object pointer; copy it into a function pointer. */
static void lookup(const char *name, void *fn, size_t size)
{
	void *sym = dlsym(RTLD_NEXT, name);
	memcpy(fn, &sym, size);
}

static void resolve(void)
{
	if (real_malloc || resolving)
		return;
	resolving = 1;
	malloc_fn *m = NULL;
	lookup("free", &real_free, sizeof real_free);
	lookup("calloc", &real_calloc, sizeof real_calloc);
	lookup("realloc", &real_realloc, sizeof real_realloc);
	lookup("aligned_alloc", &real_aligned_alloc, sizeof real_aligned_alloc);
	lookup("memalign", &real_memalign, sizeof real_memalign);
	lookup("posix_memalign", &real_posix_memalign, sizeof real_posix_memalign);
	lookup("malloc", &m, sizeof m);
	resolving = 0;
	if (!m || !real_free || !real_calloc || !real_realloc ||
	    !real_aligned_alloc || !real_memalign || !real_posix_memalign) {
		static const char msg[] = "failalloc: cannot find the real allocator\n";
		(void)!write(2, msg, sizeof msg - 1);
		abort();
	}
	__atomic_store_n(&real_malloc, m, __ATOMIC_RELEASE);
}

static int note_segment(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	/* The first object reported is the main program. */
	exe_base = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum && n_segs < MAX_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		seg_lo[n_segs] = info->dlpi_addr + ph->p_vaddr;
		seg_hi[n_segs] = seg_lo[n_segs] + ph->p_memsz;
		n_segs++;
	}
	return 1;
}

static unsigned long long env_ull(const char *name)
{
	const char *s = getenv(name);
	return s && *s ? strtoull(s, NULL, 10) : 0;
}

__attribute__((constructor)) static void failalloc_init(void)
{
	resolve();
	/* Only in the program under test, not in a launcher such as valgrind
	 * that inherits LD_PRELOAD and runs first. */
	const char *prog = getenv("LSIM_FAIL_ALLOC_PROG");
	if (strcmp(program_invocation_short_name, prog && *prog ? prog : "llmsim"))
		return;
	fail_at = env_ull("LSIM_FAIL_ALLOC_AT");
	print_count = env_ull("LSIM_FAIL_ALLOC_COUNT") != 0;
	trace = env_ull("LSIM_FAIL_ALLOC_TRACE") != 0;
	const char *log = getenv("LSIM_FAIL_ALLOC_LOG");
	if (log && *log)
		log_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
			      0644);
	dl_iterate_phdr(note_segment, NULL);
}

/* Writes the n characters of buf formatted in buf to stderr, without stdio. */
static void put(const char *buf, int n, size_t size)
{
	if (n > 0)
		(void)!write(2, buf, (size_t)n < size ? (size_t)n : size - 1);
}

__attribute__((destructor)) static void failalloc_fini(void)
{
	if (!print_count)
		return;
	char buf[160];
	int n = snprintf(buf, sizeof buf, "failalloc: count=%llu live=%zu fail_at=%llu\n",
			 __atomic_load_n(&counted, __ATOMIC_RELAXED), live_n, fail_at);
	put(buf, n, sizeof buf);
}

/* ---- the set of live blocks ---- */

static void lock(void)
{
	while (__atomic_test_and_set(&live_lock, __ATOMIC_ACQUIRE))
		;
}

static void unlock(void)
{
	__atomic_clear(&live_lock, __ATOMIC_RELEASE);
}

static size_t slot_of(uintptr_t a, size_t cap)
{
	a ^= a >> 17;
	a *= 0x9E3779B97F4A7C15u;
	return (size_t)(a >> 20) & (cap - 1);
}

/* Called with the lock held; false when the table cannot grow. */
static bool live_insert(uintptr_t a)
{
	if (2 * (live_used + 1) > live_cap) {
		size_t cap = live_cap ? live_cap : 1024;
		while (2 * (live_n + 1) > cap / 2)
			cap *= 2;
		uintptr_t *t = real_calloc(cap, sizeof *t);
		if (!t)
			return false;
		for (size_t i = 0; i < live_cap; i++)
			if (live[i] > 1) {
				size_t j = slot_of(live[i], cap);
				while (t[j])
					j = (j + 1) & (cap - 1);
				t[j] = live[i];
			}
		real_free(live);
		live = t;
		live_cap = cap;
		live_used = live_n;
	}
	size_t j = slot_of(a, live_cap);
	while (live[j] > 1)
		j = (j + 1) & (live_cap - 1);
	live_used += live[j] == 0;
	live[j] = a;
	live_n++;
	return true;
}

static void track(void *p)
{
	if (!p)
		return;
	lock();
	if (!live_insert((uintptr_t)p)) {
		static const char msg[] = "failalloc: cannot grow the live set\n";
		(void)!write(2, msg, sizeof msg - 1);
		abort();
	}
	unlock();
}

/* Forgets p if it is a live counted block; true if it was. */
static bool untrack(const void *p)
{
	if (!p || !live_n)
		return false;
	bool found = false;
	lock();
	if (live_cap) {
		size_t j = slot_of((uintptr_t)p, live_cap);
		while (live[j]) {
			if (live[j] == (uintptr_t)p) {
				live[j] = 1;
				live_n--;
				found = true;
				break;
			}
			j = (j + 1) & (live_cap - 1);
		}
	}
	unlock();
	return found;
}

/* ---- counting and failing ---- */

/* Where an allocation made from return address ra comes from, and
 * whether it is the one to fail. */
static enum origin classify(const void *ra)
{
	uintptr_t a = (uintptr_t)ra;
	int i = 0;
	while (i < n_segs && !(a >= seg_lo[i] && a < seg_hi[i]))
		i++;
	if (i == n_segs)
		return FOREIGN;
	unsigned long long k = __atomic_add_fetch(&counted, 1, __ATOMIC_RELAXED);
	if (log_fd >= 0) {
		char buf[64];
		int n = snprintf(buf, sizeof buf, "%llu 0x%llx\n", k,
				 (unsigned long long)(a - exe_base));
		if (n > 0 && (size_t)n < sizeof buf)
			(void)!write(log_fd, buf, (size_t)n);
	}
	if (k != fail_at)
		return OURS;
	if (trace) {
		char buf[160];
		int n = snprintf(buf, sizeof buf,
				 "failalloc: failing allocation %llu at offset 0x%llx\n",
				 k, (unsigned long long)(a - exe_base));
		put(buf, n, sizeof buf);
	}
	errno = ENOMEM;
	return OURS_FAIL;
}

static void *kept(void *p, enum origin o)
{
	if (o == OURS)
		track(p);
	return p;
}

void *malloc(size_t n)
{
	if (!real_malloc) {
		if (resolving)
			return arena_alloc(n);
		resolve();
	}
	enum origin o = classify(__builtin_return_address(0));
	return o == OURS_FAIL ? NULL : kept(real_malloc(n), o);
}

void *calloc(size_t n, size_t size)
{
	if (!real_malloc) {
		if (resolving) {
			/* The arena is zeroed static storage, never reused. */
			if (size && n > SIZE_MAX / size)
				return NULL;
			return arena_alloc(n * size);
		}
		resolve();
	}
	enum origin o = classify(__builtin_return_address(0));
	return o == OURS_FAIL ? NULL : kept(real_calloc(n, size), o);
}

void free(void *p)
{
	if (!p || in_arena(p))
		return;
	if (!real_free)
		resolve();
	untrack(p);
	real_free(p);
}

/* realloc for origin o, after the bootstrap cases. */
static void *do_realloc(void *p, size_t n, enum origin o)
{
	if (o == OURS_FAIL)
		return NULL;
	if (in_arena(p)) {
		/* Move an arena block to the heap; its old size is unknown but
		 * never more than the rest of the arena. */
		void *q = real_malloc(n);
		size_t avail = (size_t)(arena + sizeof arena - (unsigned char *)p);
		if (q)
			memcpy(q, p, n < avail ? n : avail);
		return kept(q, o);
	}
	void *q = real_realloc(p, n);
	if (!q && n > 0)
		return NULL; /* p is still live */
	bool was_live = untrack(p);
	return kept(q, was_live ? OURS : o);
}

void *realloc(void *p, size_t n)
{
	if (!real_malloc) {
		if (resolving) {
			void *q = arena_alloc(n);
			if (q && p)
				memmove(q, p, n); /* arena blocks only grow upward */
			return q;
		}
		resolve();
	}
	return do_realloc(p, n, classify(__builtin_return_address(0)));
}

void *reallocarray(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	if (!real_malloc)
		resolve();
	return do_realloc(p, n * size, classify(__builtin_return_address(0)));
}

char *strdup(const char *s)
{
	if (!real_malloc)
		resolve();
	enum origin o = classify(__builtin_return_address(0));
	if (o == OURS_FAIL)
		return NULL;
	size_t n = strlen(s) + 1;
	char *q = real_malloc(n);
	if (q)
		memcpy(q, s, n);
	return kept(q, o);
}

char *strndup(const char *s, size_t max)
{
	if (!real_malloc)
		resolve();
	enum origin o = classify(__builtin_return_address(0));
	if (o == OURS_FAIL)
		return NULL;
	size_t n = strnlen(s, max);
	char *q = real_malloc(n + 1);
	if (q) {
		memcpy(q, s, n);
		q[n] = '\0';
	}
	return kept(q, o);
}

void *aligned_alloc(size_t align, size_t n)
{
	if (!real_malloc)
		resolve();
	enum origin o = classify(__builtin_return_address(0));
	return o == OURS_FAIL ? NULL : kept(real_aligned_alloc(align, n), o);
}

void *memalign(size_t align, size_t n)
{
	if (!real_malloc)
		resolve();
	enum origin o = classify(__builtin_return_address(0));
	return o == OURS_FAIL ? NULL : kept(real_memalign(align, n), o);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	if (!real_malloc)
		resolve();
	enum origin o = classify(__builtin_return_address(0));
	if (o == OURS_FAIL)
		return ENOMEM;
	int rc = real_posix_memalign(out, align, n);
	if (rc == 0)
		kept(*out, o);
	return rc;
}
