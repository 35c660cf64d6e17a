/*
 * test_instance.c - the paged KV cache and the vLLM-style instance:
 * hand-computed step timings (prefill, decode, chunked prefill) under a
 * linear perf model, preemption by recompute without livelock, rejection
 * of requests that can never fit, and request conservation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "run/sim.h"

/* ---- KV cache ---- */

static void test_kv_refcount_and_lru(void **state)
{
	(void)state;
	struct lsim_kvcache *kv = lsim_kv_create(4, true);
	assert_non_null(kv);
	assert_int_equal(lsim_kv_free(kv), 4);
	int32_t a = lsim_kv_alloc(kv), b = lsim_kv_alloc(kv);
	assert_int_equal(lsim_kv_free(kv), 2);
	lsim_kv_set_hash(kv, a, 111);
	lsim_kv_set_hash(kv, b, 222);
	int32_t blocks[2] = {a, b};
	lsim_kv_release(kv, blocks, 2);
	assert_int_equal(lsim_kv_free(kv), 4);
	assert_int_equal(lsim_kv_cached(kv), 2);
	uint64_t h[3] = {111, 222, 333};
	int32_t ev = -1;
	assert_int_equal(lsim_kv_match(kv, h, 3, &ev), 2);
	assert_int_equal(ev, 2);
	int32_t got[2];
	lsim_kv_acquire(kv, h, 2, got);
	assert_int_equal(got[0], a);
	assert_int_equal(got[1], b);
	assert_int_equal(lsim_kv_free(kv), 2);
	lsim_kv_release(kv, got, 2);
	/* Released tail-first: b is evicted before a; the two never-hashed
	 * blocks come first of all. */
	int32_t c = lsim_kv_alloc(kv), e = lsim_kv_alloc(kv), f = lsim_kv_alloc(kv);
	assert_true(c != a && c != b && e != a && e != b);
	assert_int_equal(f, b);
	assert_int_equal(lsim_kv_cached(kv), 1);
	assert_int_equal(lsim_kv_match(kv, h, 2, &ev), 1); /* only 111 left */
	assert_int_equal(lsim_kv_alloc(kv), a);
	assert_int_equal(lsim_kv_alloc(kv), -1);
	assert_int_equal(lsim_kv_match(kv, h, 2, &ev), 0);
	lsim_kv_destroy(kv);
}

/* The free queue against a reference list of block ids in LRU order:
 * random allocations, releases (final or not, with shared, private or no
 * hashes) and prefix hits must find, evict and count the same content. */
static void test_kv_queue_reference(void **state)
{
	(void)state;
	enum { N = 48, STEPS = 200000 };
	struct lsim_kvcache *kv = lsim_kv_create(N, true);
	/* the reference: per block its hash (0 none), whether mapped, refs;
	 * the queue as an array of ids */
	uint64_t hash[N] = {0};
	bool mapped[N] = {false};
	int32_t refs[N] = {0}, queue[N], qn = 0, cached = 0;
	for (int32_t b = 0; b < N; b++)
		queue[qn++] = b;
	int32_t held[4 * N], n_held = 0; /* a block may be held several times */
	uint64_t rng = 12345;
	for (int step = 0; step < STEPS; step++) {
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		unsigned r = (unsigned)(rng >> 33);
		int op = r % 4;
		if (op <= 1) { /* allocate, maybe give it a hash */
			int32_t b = lsim_kv_alloc(kv);
			if (qn == 0) {
				assert_int_equal(b, -1);
				continue;
			}
			assert_true(b >= 0);
			int32_t want = queue[0]; /* the reference's head */
			memmove(queue, queue + 1, (size_t)--qn * sizeof *queue);
			if (mapped[want]) /* content evicted: that very block */
				assert_int_equal(b, want);
			else
				assert_false(mapped[b]);
			if (hash[want])
				cached--;
			if (b != want) { /* content-free: the ids swap roles */
				for (int32_t i = 0; i < qn; i++)
					if (queue[i] == b)
						queue[i] = want;
				hash[want] = hash[b];
				mapped[want] = mapped[b];
			}
			hash[b] = 0;
			mapped[b] = false;
			refs[b] = 1;
			held[n_held++] = b;
			uint64_t h = (r >> 4) % 64 + 1; /* few contents: collisions */
			int kind = (r >> 10) % 3;
			bool taken = false;
			for (int32_t i = 0; i < N; i++)
				taken |= mapped[i] && hash[i] == h;
			if (kind == 1 && !taken) {
				lsim_kv_set_hash(kv, b, h);
				hash[b] = h;
				mapped[b] = true;
				cached++;
			} else if (kind == 2) {
				lsim_kv_set_private_hash(kv, b, h + 1000);
				hash[b] = h + 1000; /* private: not mapped */
				cached++;
			}
		} else if (op == 2 && n_held > 0) { /* release one */
			int32_t i = (int32_t)((r >> 4) % (unsigned)n_held), b = held[i];
			held[i] = held[--n_held];
			bool final = (r >> 12) & 1;
			if (final)
				lsim_kv_release_final(kv, &b, 1);
			else
				lsim_kv_release(kv, &b, 1);
			if (--refs[b] > 0)
				continue;
			if (hash[b] && !mapped[b] && !final) { /* published */
				bool taken = false;
				for (int32_t k = 0; k < N; k++)
					taken |= mapped[k] && hash[k] == hash[b];
				if (taken) {
					hash[b] = 0;
					cached--;
				} else {
					mapped[b] = true;
				}
			}
			queue[qn++] = b;
		} else { /* a prefix hit on some mapped content */
			uint64_t h = (r >> 4) % 64 + 1;
			int32_t ev;
			int32_t hit = lsim_kv_match(kv, &h, 1, &ev);
			int32_t want = -1;
			for (int32_t k = 0; k < N; k++)
				if (mapped[k] && hash[k] == h)
					want = k;
			assert_int_equal(hit, want >= 0);
			if (!hit || n_held == 4 * N)
				continue;
			int32_t b;
			lsim_kv_acquire(kv, &h, 1, &b);
			assert_int_equal(b, want);
			if (refs[b]++ == 0) {
				int32_t k = 0;
				while (queue[k] != b)
					k++;
				memmove(queue + k, queue + k + 1, (size_t)(qn - k - 1) * sizeof *queue);
				qn--;
			}
			held[n_held++] = b;
		}
		assert_int_equal(lsim_kv_free(kv), qn);
		assert_int_equal(lsim_kv_cached(kv), cached);
	}
	lsim_kv_destroy(kv);
}

/* Anonymous blocks against named ones: two caches get the same random
 * operations, one with ids for every block (lsim_kv_alloc, set_hash,
 * set_private_hash), one the way a request without shared content uses
 * it (lsim_kv_alloc_anon, set_hash_anon, mark_private, name_private
 * before a release it may come back from). What is found, evicted and
 * counted must be the same after every operation. */
static void test_kv_anonymous_blocks(void **state)
{
	(void)state;
	enum { N = 40, STEPS = 100000, MAXH = 4 * N };
	struct lsim_kvcache *a = lsim_kv_create(N, true), *b = lsim_kv_create(N, true);
	/* held blocks: a's id, b's entry, and the private hash b gives on
	 * naming (0: none) */
	int32_t ha[MAXH], hb[MAXH];
	uint64_t hp[MAXH];
	int32_t n_held = 0;
	uint64_t rng = 777;
	int anon_runs = 0, named = 0, by_count = 0;
	for (int step = 0; step < STEPS; step++) {
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		unsigned r = (unsigned)(rng >> 33);
		int op = r % 5;
		if (op <= 1) { /* take k blocks */
			int32_t k = 1 + (int32_t)((r >> 4) % 6);
			bool ok = lsim_kv_alloc_anon(b, k);
			assert_int_equal(ok, lsim_kv_free(a) >= k && n_held + k <= MAXH);
			if (!ok)
				continue;
			anon_runs++;
			for (int32_t i = 0; i < k; i++) {
				ha[n_held] = lsim_kv_alloc(a);
				assert_true(ha[n_held] >= 0);
				hb[n_held] = LSIM_KV_ANON;
				hp[n_held++] = 0;
			}
		} else if (op == 2 && n_held > 0) { /* a held block fills up */
			int32_t i = (int32_t)((r >> 4) % (unsigned)n_held);
			uint64_t h = (r >> 10) % 64 + 1; /* few contents: collisions */
			if (hb[i] != LSIM_KV_ANON)
				continue; /* hashed already (set once, as requests do) */
			if ((r >> 20) & 1) {
				lsim_kv_set_hash(a, ha[i], h);
				hb[i] = lsim_kv_set_hash_anon(b, h);
				named += hb[i] >= 0;
			} else {
				lsim_kv_set_private_hash(a, ha[i], h + 1000);
				hb[i] = LSIM_KV_ANON_PRIV;
				hp[i] = h + 1000;
				lsim_kv_mark_private(b, 1);
			}
		} else if (op == 3 && n_held > 0) { /* release the last k held */
			int32_t k = 1 + (int32_t)((r >> 4) % 4);
			if (k > n_held)
				k = n_held;
			int32_t *la = ha + n_held - k, *lb = hb + n_held - k;
			if ((r >> 12) & 1) {
				lsim_kv_release_final(a, la, k);
				/* private entries then plain ones: by count */
				int32_t np = 0, nq = 0;
				while (np < k && lb[np] == LSIM_KV_ANON_PRIV)
					np++;
				while (np + nq < k && lb[np + nq] == LSIM_KV_ANON)
					nq++;
				if (np + nq == k) {
					lsim_kv_release_anon(b, nq, np);
					by_count++;
				} else {
					lsim_kv_release_final(b, lb, k);
				}
			} else {
				for (int32_t i = 0; i < k; i++)
					if (lb[i] == LSIM_KV_ANON_PRIV)
						lb[i] = lsim_kv_name_private(b, hp[n_held - k + i]);
				lsim_kv_release(a, la, k);
				lsim_kv_release(b, lb, k);
			}
			n_held -= k;
		} else if (n_held < MAXH) { /* a prefix hit on some content */
			uint64_t h = (r >> 4) % 64 + 1 + ((r >> 14) & 1) * 1000;
			int32_t eva = -1, evb = -2;
			int32_t hit = lsim_kv_match(a, &h, 1, &eva);
			assert_int_equal(lsim_kv_match(b, &h, 1, &evb), hit);
			assert_int_equal(evb, eva);
			if (hit) {
				lsim_kv_acquire(a, &h, 1, &ha[n_held]);
				lsim_kv_acquire(b, &h, 1, &hb[n_held]);
				hp[n_held++] = 0;
			}
		}
		assert_int_equal(lsim_kv_free(b), lsim_kv_free(a));
		assert_int_equal(lsim_kv_cached(b), lsim_kv_cached(a));
		assert_int_equal(lsim_kv_refs(b), lsim_kv_refs(a));
		assert_int_equal(lsim_kv_refs(b), n_held);
	}
	/* the walk went where it should: many runs taken, content mapped */
	assert_true(anon_runs > 10000);
	assert_true(named > 1000);
	assert_true(by_count > 1000);
	lsim_kv_destroy(a);
	lsim_kv_destroy(b);
}

static void test_kv_hash_map_churn(void **state)
{
	(void)state;
	/* Many hash insert/evict cycles keep lookups exact. */
	struct lsim_kvcache *kv = lsim_kv_create(64, true);
	uint64_t next = 1;
	for (int round = 0; round < 200; round++) {
		int32_t blk[64];
		uint64_t hs[64];
		for (int i = 0; i < 64; i++) {
			blk[i] = lsim_kv_alloc(kv);
			assert_true(blk[i] >= 0);
			hs[i] = next++ * 0x9e3779b97f4a7c15ULL;
			lsim_kv_set_hash(kv, blk[i], hs[i]);
		}
		assert_int_equal(lsim_kv_alloc(kv), -1);
		lsim_kv_release(kv, blk, 64);
		assert_int_equal(lsim_kv_match(kv, hs, 64, NULL), 64);
	}
	lsim_kv_destroy(kv);
}

static void test_kv_private_hashes(void **state)
{
	(void)state;
	/* A private hash is unfindable while held, findable once released by
	 * a holder that may come back (lsim_kv_release), and never after a
	 * final release; eviction removes a published one. */
	struct lsim_kvcache *kv = lsim_kv_create(4, true);
	int32_t a = lsim_kv_alloc(kv), b = lsim_kv_alloc(kv);
	lsim_kv_set_private_hash(kv, a, 501);
	lsim_kv_set_private_hash(kv, b, 502);
	lsim_kv_set_private_hash(kv, b, 999); /* already hashed: ignored */
	assert_int_equal(lsim_kv_cached(kv), 2);
	uint64_t h[2] = {501, 502};
	int32_t ev = -1;
	assert_int_equal(lsim_kv_match(kv, h, 2, &ev), 0);
	int32_t ab[2] = {a, b};
	lsim_kv_release(kv, ab, 2);
	assert_int_equal(lsim_kv_match(kv, h, 2, &ev), 2);
	assert_int_equal(ev, 2);
	int32_t got[2];
	lsim_kv_acquire(kv, h, 2, got);
	assert_int_equal(got[0], a);
	assert_int_equal(got[1], b);
	/* b's content is mapped now: a final release keeps it findable */
	lsim_kv_release_final(kv, got, 2);
	assert_int_equal(lsim_kv_match(kv, h, 2, &ev), 2);

	/* final release of blocks never published: they stay unfindable,
	 * count as cached until evicted, and eviction is clean */
	struct lsim_kvcache *k2 = lsim_kv_create(2, true);
	int32_t c = lsim_kv_alloc(k2), d = lsim_kv_alloc(k2);
	lsim_kv_set_private_hash(k2, c, 601);
	lsim_kv_set_private_hash(k2, d, 602);
	int32_t cd[2] = {c, d};
	lsim_kv_release_final(k2, cd, 2);
	uint64_t h2[2] = {601, 602};
	assert_int_equal(lsim_kv_match(k2, h2, 2, &ev), 0);
	assert_int_equal(lsim_kv_cached(k2), 2);
	assert_int_equal(lsim_kv_free(k2), 2);
	/* nothing can be found in them: which one comes first is free (the
	 * most recently freed, here c) */
	int32_t x = lsim_kv_alloc(k2), y = x == c ? d : c;
	assert_int_equal(x, c);
	assert_int_equal(lsim_kv_cached(k2), 1);
	/* a shared hash equal to a published private one is refused, as two
	 * shared blocks with one content are */
	lsim_kv_set_private_hash(k2, x, 701);
	lsim_kv_release(k2, &x, 1);
	assert_int_equal(lsim_kv_cached(k2), 2); /* y's until its turn, x's */
	assert_int_equal(lsim_kv_alloc(k2), y); /* y's turn came first */
	assert_int_equal(lsim_kv_cached(k2), 1);
	lsim_kv_set_hash(k2, y, 701);
	uint64_t h3 = 701;
	int32_t blk;
	assert_int_equal(lsim_kv_match(k2, &h3, 1, &ev), 1);
	lsim_kv_acquire(k2, &h3, 1, &blk);
	assert_int_equal(blk, x);
	assert_int_equal(lsim_kv_cached(k2), 1);
	lsim_kv_destroy(k2);
	lsim_kv_destroy(kv);
}

/* ---- a linear perf model: 10 ms + 1 us per token ---- */

static lsim_time linear_time(const struct lsim_perf *p, const struct lsim_batch *b)
{
	(void)p;
	lsim_time tokens = b->n_decode;
	for (int i = 0; i < b->n_prefill; i++)
		tokens += b->prefill_chunk[i];
	return 10 * LSIM_MS + tokens * LSIM_US;
}

static void linear_destroy(struct lsim_perf *p) { free(p); }

/* its work: a third of its time at peak rates, 1 GFLOP per token of
 * context, and 1 MB plus 1 kB per token of context moved */
static struct lsim_iter_work linear_work(const struct lsim_perf *p,
					 const struct lsim_batch *b)
{
	double ctx = 0;
	for (int i = 0; i < b->n_decode; i++)
		ctx += b->decode_ctx[i] + 1;
	for (int i = 0; i < b->n_prefill; i++)
		ctx += b->prefill_ctx[i] + b->prefill_chunk[i];
	double t = lsim_time_to_s(linear_time(p, b));
	return (struct lsim_iter_work){t / 3, 1e9 * ctx, 1e6 + 1e3 * ctx};
}

static const struct lsim_perf_ops linear_ops = {"linear", linear_time, linear_destroy,
						linear_work};

static struct lsim_perf *linear_perf(void)
{
	struct lsim_perf *p = calloc(1, sizeof *p);
	p->ops = &linear_ops;
	return p;
}

static const struct lsim_model_arch toy_model = {
	.name = "toy", .n_layers = 1, .hidden = 64, .n_heads = 1, .n_kv_heads = 1,
	.head_dim = 64, .intermediate = 64, .vocab = 100, .params = 1e6,
	.bytes_per_param = 2, .max_context = 100000,
};
static const struct lsim_gpu_profile toy_gpu = {.name = "toy", .tdp_w = 300, .idle_w = 100};

/* How run_trace_ex runs: after (if not NULL) is called after every
 * event; macro: decode runs as macro steps; limit: 0 or the run's end;
 * setup (if not NULL) is called with ctx just before the run. */
struct run_opts {
	lsim_periodic_fn after;
	void *ctx;
	bool macro;
	lsim_time limit;
	void (*setup)(struct lsim_sim *s, void *ctx);
	int n_inst; /* instances alike (0: one) */
};

/* Writes a CSV trace (seconds) and runs it through one instance. */
static void run_trace_ex(struct lsim_sim *s, const char *rows, int64_t blocks,
			 int64_t max_tokens, int64_t max_seqs,
			 const struct run_opts *o)
{
	char path[] = "/tmp/lsim_inst_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "t,p,o\n%s", rows);
	fclose(f);
	struct lsim_diag d = {0};
	assert_int_equal(lsim_sim_init(s, 1, &d), 0);
	s->sample_period = 0;
	s->retain_requests = true; /* the tests read s->sv.reqs[i] */
	s->sv.macro_steps = o->macro;
	struct lsim_engine_cfg cfg = {
		.max_num_seqs = max_seqs, .max_num_batched_tokens = max_tokens,
		.block_size = 16, .num_gpu_blocks = blocks,
		.gpu_memory_utilization = 0.9, .enable_prefix_caching = true,
		.enable_chunked_prefill = true,
	};
	for (int i = 0; i < (o->n_inst > 0 ? o->n_inst : 1); i++) {
		struct lsim_instance *in = lsim_sim_add_instance(s);
		assert_int_equal(lsim_instance_init(in, &s->sv, i, &cfg, &toy_gpu, &toy_model,
						    1, linear_perf(), &d), 0);
	}
	struct lsim_csv_map map = {"t", LSIM_TF_SECONDS, "p", "o"};
	struct lsim_workload *w = NULL;
	assert_int_equal(lsim_workload_csv_open(path, &map, &w, &d), 0);
	lsim_set_after_event(s->sv.eng, o->after, o->ctx);
	if (o->setup)
		o->setup(s, o->ctx);
	assert_int_equal(lsim_sim_run(s, w, o->limit, &d), 0);
	unlink(path);
}

static void run_trace(struct lsim_sim *s, const char *rows, int64_t blocks,
		      int64_t max_tokens, int64_t max_seqs)
{
	run_trace_ex(s, rows, blocks, max_tokens, max_seqs, &(struct run_opts){0});
}

static void test_single_request_timing(void **state)
{
	(void)state;
	struct lsim_sim s;
	run_trace(&s, "0,100,5\n", 100, 2048, 256);
	assert_int_equal(s.n_reqs, 1);
	const struct lsim_req *r = &s.sv.reqs[0];
	assert_int_equal(r->status, LSIM_REQ_FINISHED);
	assert_int_equal(r->first_sched, 0);
	/* prefill of 100 tokens: 10 ms + 100 us */
	assert_int_equal(r->first_token, 10100 * LSIM_US);
	/* then 4 decode steps of 10.001 ms */
	assert_int_equal(r->finish, 10100 * LSIM_US + 4 * 10001 * LSIM_US);
	assert_int_equal(s.inst[0]->iterations, 5);
	assert_int_equal(lsim_kv_free(s.inst[0]->kv), 100);
	lsim_sim_release(&s);
}

static void test_chunked_prefill_and_batching(void **state)
{
	(void)state;
	struct lsim_sim s;
	/* A 5000-token prompt in chunks of 2048, 2048, 904; a second request
	 * arriving at 1 ms joins once the first one's prefill is done. */
	run_trace(&s, "0,5000,2\n0.001,10,1\n", 1000, 2048, 256);
	const struct lsim_req *a = &s.sv.reqs[0], *b = &s.sv.reqs[1];
	lsim_time t1 = 12048 * LSIM_US, t2 = 2 * t1, t3 = t2 + 10904 * LSIM_US;
	/* step 3 had budget 2048 - 904 = 1144 left: b's prefill rides along */
	assert_int_equal(a->first_token, t3 + 10 * LSIM_US);
	assert_int_equal(b->first_sched, t2);
	assert_int_equal(b->first_token, t3 + 10 * LSIM_US);
	assert_int_equal(b->finish, b->first_token); /* one output token */
	/* a's last token: one decode step alone */
	assert_int_equal(a->finish, a->first_token + 10001 * LSIM_US);
	lsim_sim_release(&s);
}

static void test_preemption_bounded(void **state)
{
	(void)state;
	struct lsim_sim s;
	/* 40 blocks (640 tokens) for 12 requests of 50 + 300 tokens: only one
	 * fits at full length, so the scheduler must preempt and recompute. */
	char rows[2048] = "";
	for (int i = 0; i < 12; i++)
		snprintf(rows + strlen(rows), sizeof rows - strlen(rows),
			 "0,50,300\n");
	run_trace(&s, rows, 40, 2048, 256);
	int32_t max_pre = 0, total = 0;
	for (size_t i = 0; i < s.n_reqs; i++) {
		assert_int_equal(s.sv.reqs[i].status, LSIM_REQ_FINISHED);
		assert_int_equal(s.sv.reqs[i].generated, 300);
		if (s.sv.reqs[i].preemptions > max_pre)
			max_pre = s.sv.reqs[i].preemptions;
		total += s.sv.reqs[i].preemptions;
	}
	assert_int_equal(s.n_done, 12);
	assert_true(total > 0);	   /* the scenario does preempt */
	assert_true(max_pre <= 12); /* but no request is starved */
	assert_int_equal(s.inst[0]->preemptions, total);
	assert_int_equal(lsim_kv_free(s.inst[0]->kv), 40);
	/* FCFS: completion order follows arrival order */
	for (size_t i = 1; i < s.n_reqs; i++)
		assert_true(s.sv.reqs[i].finish >= s.sv.reqs[i - 1].finish);
	lsim_sim_release(&s);
}

/* The invariant checks: they hold after every event of a run that
 * preempts, and each one catches the state it guards once broken. */
struct inv_count {
	struct lsim_sim *s;
	int64_t checks;
	int bad;
};

static void check_each(struct lsim_engine *eng, void *ctx)
{
	(void)eng;
	struct inv_count *c = ctx;
	struct lsim_diag d = {0};
	if (lsim_sim_check(c->s, &d) != 0) {
		printf("  %s\n", d.msg);
		c->bad++;
	}
	c->checks++;
}

static void expect_broken(struct lsim_sim *s, const char *fragment)
{
	struct lsim_diag d = {0};
	assert_int_equal(lsim_sim_check(s, &d), LSIM_ESTATE);
	printf("  caught: %s\n", d.msg);
	assert_non_null(strstr(d.msg, fragment));
}

static void test_invariants(void **state)
{
	(void)state;
	struct lsim_sim s;
	struct inv_count c = {.s = &s};
	char rows[2048] = "";
	for (int i = 0; i < 12; i++)
		snprintf(rows + strlen(rows), sizeof rows - strlen(rows),
			 "0,50,300\n");
	run_trace_ex(&s, rows, 40, 2048, 256, &(struct run_opts){check_each, &c, false, 0});
	assert_int_equal(c.bad, 0);
#ifndef LSIM_INVARIANTS /* there the run installs its own check instead */
	assert_true(c.checks > 300); /* one per event: 12 x 300 tokens */
#endif
	assert_true(s.inst[0]->preemptions > 0);
	struct lsim_diag d = {0};
	assert_int_equal(lsim_sim_check(&s, &d), 0);

	s.n_done--; /* a request lost */
	expect_broken(&s, "pulled from the workload");
	s.n_done++;

	int32_t b = lsim_kv_alloc(s.inst[0]->kv); /* a block nobody holds */
	expect_broken(&s, "KV blocks");
	lsim_kv_release(s.inst[0]->kv, &b, 1);
	assert_int_equal(lsim_sim_check(&s, &d), 0);

	struct lsim_instance *in = s.inst[0];
	int32_t *run = malloc(sizeof *run);
	assert_non_null(run);
	run[0] = 0; /* an ended request still listed as running */
	int32_t *old = in->run;
	size_t old_len = in->run_len;
	in->run = run;
	in->run_len = 1;
	expect_broken(&s, "no live request");
	in->run = old;
	in->run_len = old_len;
	free(run);

	s.inv_last = lsim_now(s.sv.eng) + 1;
	expect_broken(&s, "clock went back");
	lsim_sim_release(&s);
}

/* The routers' kept view: a counts-only router sees at every arrival
 * what describing each instance afresh would give, though only the
 * instances touched since the last arrival are described again; a count
 * changed without a touch is caught by the invariant check. */
struct view_probe {
	struct lsim_sim *s;
	struct lsim_policy pol;
	int64_t routes, wrong;
	char caught[320];
};

/* Mid-run, with the view just made current: a count changed behind the
 * routers' back is caught, and is not once touched. */
static void probe_mutation(struct view_probe *p)
{
	struct lsim_instance *in = p->s->inst[1];
	assert_int_equal(lsim_sim_check_view(p->s, p->caught, sizeof p->caught), 0);
	in->outstanding++;
	assert_int_equal(lsim_sim_check_view(p->s, p->caught, sizeof p->caught),
			 LSIM_ESTATE);
	lsim_instance_touch(in);
	char why[320];
	assert_int_equal(lsim_sim_check_view(p->s, why, sizeof why), 0);
	in->outstanding--; /* touched: described again at the next arrival */
}

static int32_t probe_route(void *state, const struct lsim_request_info *r,
			   const struct lsim_instance_info *inst, int32_t n)
{
	(void)r;
	struct view_probe *p = state;
	int32_t best = 0;
	for (int32_t i = 0; i < n; i++) {
		const struct lsim_instance *in = p->s->inst[i];
		if (inst[i].id != in->id || inst[i].outstanding != in->outstanding ||
		    inst[i].waiting != (int64_t)in->wait_len ||
		    inst[i].running != (int64_t)in->run_len ||
		    inst[i].kv_total_blocks != in->kv_blocks)
			p->wrong++;
		if (inst[i].outstanding < inst[best].outstanding)
			best = i;
	}
	if (++p->routes == 45)
		probe_mutation(p);
	return best;
}

static const struct lsim_scheduler_ops probe_ops = {.route = probe_route};

static const struct lsim_policy_type probe_type = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.flags = LSIM_POLICY_COUNTS_ONLY, .name = "probe",
	.summary = "least outstanding, checking what it is shown", .ops = &probe_ops,
};

static void probe_setup(struct lsim_sim *s, void *ctx)
{
	struct view_probe *p = ctx;
	p->s = s;
	p->pol = (struct lsim_policy){.type = &probe_type, .role = LSIM_ROLE_ROUTER,
				      .state = p};
	s->router = &p->pol;
}

static void test_kept_routing_view(void **state)
{
	(void)state;
	char rows[8192] = "";
	for (int i = 0; i < 90; i++) /* bursts, and prompts and outputs of all sizes */
		snprintf(rows + strlen(rows), sizeof rows - strlen(rows), "%.3f,%d,%d\n",
			 (i / 6) * 0.05, 20 + (i * 37) % 300, 1 + (i * 53) % 120);
	for (int macro = 0; macro < 2; macro++) {
		struct lsim_sim s;
		struct view_probe p = {0};
		run_trace_ex(&s, rows, 60, 512, 8,
			     &(struct run_opts){.macro = macro, .setup = probe_setup,
						.ctx = &p, .n_inst = 3});
		printf("  macro %d: %lld routes, %lld stale entries seen, %d preemptions\n",
		       macro, (long long)p.routes, (long long)p.wrong,
		       (int)(s.inst[0]->preemptions + s.inst[1]->preemptions +
			     s.inst[2]->preemptions));
		assert_int_equal(p.routes, 90);
		assert_int_equal(p.wrong, 0);
		assert_int_equal(s.n_done, 90);
		/* every instance took some: the router did spread them */
		for (int i = 0; i < 3; i++)
			assert_true(s.inst[i]->iterations > 0);
		assert_int_equal(s.sv.info_n, 3); /* the view was kept */
		printf("  caught: %s\n", p.caught);
		assert_non_null(strstr(p.caught, "instance 1 changed without a touch"));
		lsim_sim_release(&s);
	}
}

/* Runs rows step by step and as macro steps (ending at limit, if not 0):
 * every request's record and the instance's counters must agree; returns
 * the events each took in ev[0], ev[1], and the preemptions in ev[2]. */
static void same_as_macro(const char *rows, int64_t blocks, int64_t max_seqs,
			  lsim_time limit, uint64_t ev[3])
{
	struct lsim_sim s[2];
	for (int m = 0; m < 2; m++) {
		run_trace_ex(&s[m], rows, blocks, 2048, max_seqs,
			     &(struct run_opts){NULL, NULL, m == 1, limit});
		ev[m] = lsim_events_processed(s[m].sv.eng);
	}
	assert_int_equal(s[0].n_reqs, s[1].n_reqs);
	for (size_t i = 0; i < s[0].n_reqs; i++) {
		const struct lsim_req *a = &s[0].sv.reqs[i], *b = &s[1].sv.reqs[i];
		assert_int_equal(a->status, b->status);
		assert_int_equal(a->first_sched, b->first_sched);
		assert_int_equal(a->first_token, b->first_token);
		assert_int_equal(a->finish, b->finish);
		assert_int_equal(a->generated, b->generated);
		assert_int_equal(a->computed, b->computed);
		assert_int_equal(a->nblocks, b->nblocks);
		assert_int_equal(a->preemptions, b->preemptions);
		assert_true(a->gpu_ns == b->gpu_ns); /* the same double */
		assert_true(a->max_kv_bytes == b->max_kv_bytes);
	}
	const struct lsim_instance *x = s[0].inst[0], *y = s[1].inst[0];
	assert_int_equal(x->iterations, y->iterations);
	assert_int_equal(x->tokens, y->tokens);
	assert_int_equal(x->busy_ns, y->busy_ns);
	assert_true(x->work_ns == y->work_ns);
	assert_true(x->flops == y->flops && x->flops > 0); /* the same doubles */
	assert_true(x->bytes == y->bytes && x->bytes > 0);
	assert_int_equal(x->queued_tokens, y->queued_tokens);
	assert_int_equal(x->preemptions, y->preemptions);
	ev[2] = (uint64_t)x->preemptions;
	assert_int_equal(lsim_kv_free(x->kv), lsim_kv_free(y->kv));
	assert_int_equal(lsim_kv_cached(x->kv), lsim_kv_cached(y->kv));
	assert_int_equal(lsim_now(s[0].sv.eng), lsim_now(s[1].sv.eng));
	lsim_sim_release(&s[0]);
	lsim_sim_release(&s[1]);
}

static void test_macro_steps(void **state)
{
	(void)state;
	uint64_t ev[3];
	/* a: prefill 10.1 ms, then decode steps of 10.001 ms alone, ending
	 * at 10.1 + 10.001 j ms; b arrives at 200 ms, in a's 20th step
	 * (190.118 - 200.119 ms): the run is cut there and b joins at its
	 * end, as step by step */
	same_as_macro("0,100,60\n0.2,10,5\n", 100, 256, 0, ev);
	struct lsim_sim s;
	run_trace_ex(&s, "0,100,60\n0.2,10,5\n", 100, 2048, 256,
		     &(struct run_opts){NULL, NULL, true, 0});
	assert_int_equal(s.sv.reqs[1].first_sched, 200119 * LSIM_US);
	/* a's 59 decode steps take 10.001 ms alone, 10 us more with b's
	 * prefill of 10 tokens, 1 us more with each of b's 4 decodes */
	assert_int_equal(s.sv.reqs[0].finish, 10100 * LSIM_US + 59 * 10001 * LSIM_US +
						   14 * LSIM_US);
	lsim_sim_release(&s);
	/* step by step: a's 60 steps (b rides along in 5 of them), 2
	 * arrivals and the kick that starts the first step: 63 events. As
	 * macro steps: a's arrival, the kick, its prefill, the run planned
	 * for 32 steps and cut at 200.119 ms (20 steps), b's arrival, the
	 * step with b's prefill, a run of 4 to b's end, and a's last 34
	 * steps, a run planned for 32 and carried on at their end for the
	 * last 2 (extend_run): 9 events */
	assert_int_equal(ev[0], 63);
	assert_int_equal(ev[1], 9);

	/* preemptions: 12 requests in 40 blocks */
	char rows[2048] = "";
	for (int i = 0; i < 12; i++)
		snprintf(rows + strlen(rows), sizeof rows - strlen(rows), "%g,50,%d\n",
			 0.05 * i, 100 + 37 * i);
	same_as_macro(rows, 40, 256, 0, ev);
	assert_true(ev[2] > 0); /* 26 */
	assert_true(ev[1] < ev[0]); /* 1,168 of 1,676: requests wait */
	/* stopped by a limit inside a run: the steps up to it end */
	same_as_macro(rows, 40, 256, 3 * LSIM_S + 123457, ev);
	assert_true(ev[2] > 0);
	/* runs cut by the requests a full batch kept waiting */
	same_as_macro(rows, 400, 3, 0, ev);
	assert_true(ev[1] < ev[0]); /* 887 of 1,385 */
	same_as_macro(rows, 400, 4, 7 * LSIM_S, ev);
	/* room for all: runs from one arrival or finish to the next */
	same_as_macro(rows, 400, 256, 0, ev);
	assert_true(ev[1] < ev[0] / 5); /* 60 of 575 */
}

/* What an event sees of instance 0 and request 0 of a run. */
struct probe_seen {
	const struct lsim_sim *s;
	int n;
	struct {
		int64_t iterations, tokens;
		int32_t generated, computed, nblocks, kv_free, kv_seen_free;
	} at[3];
};

static void probe_record(struct probe_seen *p)
{
	const struct lsim_instance *in = p->s->inst[0];
	const struct lsim_req *r = &p->s->sv.reqs[0];
	p->at[p->n].iterations = in->iterations;
	p->at[p->n].tokens = in->tokens;
	p->at[p->n].generated = r->generated;
	p->at[p->n].computed = r->computed;
	p->at[p->n].nblocks = r->nblocks;
	p->at[p->n].kv_free = lsim_kv_free(in->kv);
	p->at[p->n].kv_seen_free = lsim_instance_kv_free(in);
	p->n++;
}

/* arg 1: records, advances the instance as describe does, records. */
static void probe(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct probe_seen *p = subject;
	probe_record(p);
	if (arg == 1) {
		lsim_instance_advance(p->s->inst[0], lsim_now(eng));
		probe_record(p);
	}
}

/* Two probes at 140 ms: a light one, then one with tag 0. */
static void add_probes(struct lsim_sim *s, void *ctx)
{
	struct probe_seen *p = ctx;
	p->s = s;
	assert_true(lsim_schedule_tag(s->sv.eng, 140 * LSIM_MS, probe, p, 1, LSIM_TAG_LIGHT));
	assert_true(lsim_schedule(s->sv.eng, 140 * LSIM_MS, probe, p, 0));
}

/* Macro steps catch a run up lazily: an event tagged light sees the
 * instance as the run left it until it advances it (as routing does),
 * which brings the instance's side up to date; an event with tag 0 sees
 * the requests' side too. */
static void test_macro_settle(void **state)
{
	(void)state;
	struct probe_seen seen = {0};
	struct lsim_sim s;
	/* prefill of 100 tokens 0 - 10.1 ms (first token), then decode step
	 * j ends at 10.1 + 10.001 j ms: at 140 ms steps 1 - 12 have ended
	 * (130.112 ms; step 13 ends at 140.113), the run (32 steps) goes on.
	 * Blocks of 16: 7 hold 101 tokens; after step 12 the request holds
	 * 112 and takes an 8th for the 113th. */
	run_trace_ex(&s, "0,100,60\n", 100, 2048, 256,
		     &(struct run_opts){.macro = true, .setup = add_probes, .ctx = &seen});
	assert_int_equal(seen.n, 3);
	/* light, as the run left it: 2 steps started (the prefill, decode
	 * 1) of 100 + 1 tokens */
	assert_int_equal(seen.at[0].iterations, 2);
	assert_int_equal(seen.at[0].tokens, 101);
	assert_int_equal(seen.at[0].kv_seen_free, 100 - 7);
	/* advanced, and with tag 0: 14 steps started (decode 1 - 13) of
	 * 100 + 13 tokens, 8 blocks taken */
	for (int i = 1; i < 3; i++) {
		assert_int_equal(seen.at[i].iterations, 14);
		assert_int_equal(seen.at[i].tokens, 113);
		assert_int_equal(seen.at[i].kv_seen_free, 100 - 8);
	}
	/* light, before and after advancing: the request as the run left
	 * it, its 8th block counted as taken, not allocated */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(seen.at[i].generated, 1);
		assert_int_equal(seen.at[i].computed, 100);
		assert_int_equal(seen.at[i].nblocks, 7);
		assert_int_equal(seen.at[i].kv_free, 100 - 7);
	}
	/* tag 0: settled */
	assert_int_equal(seen.at[2].generated, 13);
	assert_int_equal(seen.at[2].computed, 112);
	assert_int_equal(seen.at[2].nblocks, 8);
	assert_int_equal(seen.at[2].kv_free, 100 - 8);
	/* and it ends as step by step */
	assert_int_equal(s.sv.reqs[0].finish, 10100 * LSIM_US + 59 * 10001 * LSIM_US);
	lsim_sim_release(&s);
}

static void test_reject_never_fits(void **state)
{
	(void)state;
	struct lsim_sim s;
	/* 10 blocks = 160 tokens: 100 + 100 can never fit. */
	run_trace(&s, "0,100,100\n0,20,5\n", 10, 2048, 256);
	assert_int_equal(s.sv.reqs[0].status, LSIM_REQ_REJECTED);
	assert_int_equal(s.sv.reqs[1].status, LSIM_REQ_FINISHED);
	assert_int_equal(s.n_done, 2);
	lsim_sim_release(&s);
}

static void test_max_num_seqs(void **state)
{
	(void)state;
	struct lsim_sim s;
	/* Cap of 2 sequences: the third waits for the first to finish. */
	run_trace(&s, "0,10,3\n0,10,3\n0,10,3\n", 100, 2048, 2);
	const struct lsim_req *r = s.sv.reqs;
	assert_int_equal(r[0].first_sched, 0);
	assert_int_equal(r[1].first_sched, 0);
	/* steps: prefill(20 tok) 10.02 ms, decode x2 10.002 ms each */
	lsim_time done = 10020 * LSIM_US + 2 * 10002 * LSIM_US;
	assert_int_equal(r[0].finish, done);
	assert_int_equal(r[2].first_sched, done);
	lsim_sim_release(&s);
}

/* Mooncake-style prefix ids drive the prefix cache across requests. */
static void test_trace_prefix_hashes(void **state)
{
	(void)state;
	char path[] = "/tmp/lsim_mc_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	/* 1024-token prompts = two 512-token trace blocks; arrivals 1 s apart
	 * so each runs alone */
	fprintf(f, "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 2, \"hash_ids\": [5, 6]}\n"
		   "{\"timestamp\": 1000, \"input_length\": 1024, \"output_length\": 2, \"hash_ids\": [5, 6]}\n"
		   "{\"timestamp\": 2000, \"input_length\": 1024, \"output_length\": 2, \"hash_ids\": [5, 7]}\n"
		   "{\"timestamp\": 3000, \"input_length\": 1024, \"output_length\": 2, \"hash_ids\": [8, 6]}\n");
	fclose(f);
	struct lsim_diag d = {0};
	struct lsim_sim s;
	assert_int_equal(lsim_sim_init(&s, 1, &d), 0);
	s.sample_period = 0;
	s.retain_requests = true;
	struct lsim_engine_cfg cfg = {
		.max_num_seqs = 8, .max_num_batched_tokens = 4096, .block_size = 16,
		.num_gpu_blocks = 1000, .gpu_memory_utilization = 0.9,
		.enable_prefix_caching = true, .enable_chunked_prefill = true,
	};
	struct lsim_instance *in = lsim_sim_add_instance(&s);
	assert_int_equal(lsim_instance_init(in, &s.sv, 0, &cfg, &toy_gpu, &toy_model, 1,
					    linear_perf(), &d), 0);
	struct lsim_workload *w = NULL;
	assert_int_equal(lsim_workload_jsonl_open(path, &w, &d), 0);
	assert_int_equal(lsim_sim_run(&s, w, 0, &d), 0);
	/* 1st: no hit. 2nd: same ids, all but the last block (the last token
	 * is always computed): 63 blocks = 1008 tokens. 3rd: shares trace
	 * block 5 only: 32 blocks = 512 tokens. 4th: a different first block
	 * hides the rest of the prefix: nothing. */
	assert_int_equal(in->prompt_tokens_admitted, 4 * 1024);
	assert_int_equal(in->prefix_hit_tokens, 1008 + 512);
	/* prefill of the 2nd request is 16 tokens: 10 ms + 16 us */
	assert_int_equal(s.sv.reqs[1].first_token - s.sv.reqs[1].arrival, 10016 * LSIM_US);
	lsim_sim_release(&s);
	unlink(path);

	/* a bad hash id names the key and the line */
	strcpy(path, "/tmp/lsim_mc_XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fprintf(f, "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [1]}\n"
		   "{\"timestamp\": 1, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [1, -2]}\n");
	fclose(f);
	assert_int_equal(lsim_workload_jsonl_open(path, &w, &d), 0);
	struct lsim_req_spec spec;
	assert_int_equal(lsim_workload_next(w, &spec, &d), 1);
	assert_int_equal(spec.n_hashes, 1);
	assert_int_equal(spec.hash_block_tokens, 512);
	assert_int_equal(lsim_workload_next(w, &spec, &d), LSIM_EFORMAT);
	assert_int_equal(d.line, 2);
	assert_string_equal(d.key, "hash_ids");
	lsim_workload_destroy(w);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kv_refcount_and_lru),
		cmocka_unit_test(test_kv_queue_reference),
		cmocka_unit_test(test_kv_anonymous_blocks),
		cmocka_unit_test(test_kv_hash_map_churn),
		cmocka_unit_test(test_kv_private_hashes),
		cmocka_unit_test(test_single_request_timing),
		cmocka_unit_test(test_chunked_prefill_and_batching),
		cmocka_unit_test(test_preemption_bounded),
		cmocka_unit_test(test_invariants),
		cmocka_unit_test(test_kept_routing_view),
		cmocka_unit_test(test_macro_steps),
		cmocka_unit_test(test_macro_settle),
		cmocka_unit_test(test_reject_never_fits),
		cmocka_unit_test(test_max_num_seqs),
		cmocka_unit_test(test_trace_prefix_hashes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
