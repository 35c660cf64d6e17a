/*
 * perf_roofline.c - the `roofline` performance backend: iteration time from
 * the model architecture and a hardware profile, per operator
 *
 *   time = max(FLOPs / (bf16_flops * eff), bytes / (hbm_bw * mbu))
 *          + launch_s * kernels,   eff(M) = mfu_max * M / (M + mfu_half_tokens)
 *
 * summed over the operators of one decoder layer (two RMSNorms, QKV GEMM,
 * rotary embedding, KV-cache write + attention, O GEMM, MLP or MoE experts)
 * times the layer count, plus two all-reduces per layer under tensor
 * parallelism (timed by the NCCL collective model, sim/cluster/collective.h,
 * on the GPUs' fabric), plus the once-per-iteration embedding, final norm
 * and LM head (at tp > 1 with the embedding's all-reduce and the logits'
 * all-gather of vLLM's vocab-parallel layers) and the CPU overhead (under pipeline parallelism a stage
 * takes its own layers, the first the embedding and the CPU overhead, the
 * last the final norm and the LM head). Everything is per GPU of the TP group (weights and
 * heads divided by tp). With a host issue latency the serving stack's CPU
 * issues the iteration's kernels while the GPU runs them, so the iteration
 * takes max(GPU time, kernels x host issue latency) before the CPU
 * overhead (a pipeline stage, its own kernels). Formulas, sources and
 * choices: docs/perf-model.md
 * (calibration facts sections 3.5-3.6).
 *
 * All operators but attention and the LM head depend on the iteration's
 * token count alone; their terms are kept per token count in a small
 * direct-mapped cache and added back in the same order, so a cached
 * iteration time is the same double as a computed one.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "cluster/collective.h"
#include "serving/memplan.h"
#include "serving/perf.h"
#include "kernel/time_ns.h"

struct roof_state {
	int n_layers;
	int tp;
	double peak;	 /* bf16 FLOP/s */
	double mfu_max, mfu_half;
	double bw;	 /* achievable bytes/s: hbm_bw * mbu */
	double hbm;	 /* peak bytes/s */
	double launch;	 /* s per kernel */
	struct lsim_coll_topo ar_topo; /* the fabric the all-reduces cross */
	bool ar_on_links; /* their data moves on the link model: latency only */
	double cpu;	 /* s per iteration */
	double host;	 /* s per iteration: the host's issue of its kernels (0: none) */
	double host_k;	 /* s per kernel issued (host_issue_latency) */
	double layer_k;	 /* kernels per decoder layer */
	/* shapes, per GPU of the TP group */
	double h;	 /* hidden */
	double bpp;	 /* bytes per parameter, activation and KV element */
	double d;	 /* head dim */
	double heads;	 /* query heads per GPU */
	double q;	 /* query width per GPU: heads * d */
	double kvw;	 /* K (or V) width per GPU: kv heads per GPU * d */
	double f;	 /* MLP inner size per GPU (per expert for MoE) */
	double g;	 /* matrices in the MLP: 3 gated, 2 plain */
	double vocab_r;	 /* vocabulary per GPU (vocab-parallel LM head) */
	double logit_b;	 /* bytes of one sequence's logits all-gathered (tp > 1) */
	bool moe;
	double n_experts, top_k;
	struct t_terms *cache; /* TERM_CACHE entries, direct-mapped by T */
};

/* The terms of the operators that depend only on the token count T, in
 * the order roof_eval adds them: before attention (two norms, QKV,
 * rotary), after it (O, the MLP or MoE operators, the all-reduces), and
 * once per iteration before the LM head (embedding, final norm). */
#define MAX_POST 6
#define TERM_CACHE 64
typedef struct lsim_iter_work work_t;
struct t_terms {
	double tokens; /* the T they are for; 0: empty */
	double pre;
	work_t pre_w;
	double post[MAX_POST];
	work_t post_w[MAX_POST];
	int n_post;
	double once;
	work_t once_w;
	double emb; /* the embedding's gather and, at tp > 1, its all-reduce: once's first terms */
	/* per layer besides attention: pre + the launches of the attention
	 * kernels + the post terms in order, time and work (roof_layers) */
	double rest;
	work_t rest_w;
	/* with the all-reduces on the links: the cap of each GPU's ring flow
	 * (roof_ring_rate_cap) */
	double ar_cap;
};

/* Achieved fraction of peak for a GEMM with m rows. */
static double eff(const struct roof_state *s, double m)
{
	return s->mfu_max * m / (m + s->mfu_half);
}

/* One operator: the slower of its compute and its memory traffic. Adds
 * to work->s the time it would take at peak FLOP/s or peak HBM bandwidth,
 * whichever binds (the GPU's utilisation is work / time), and its FLOPs
 * and bytes to the others. */
static double op(const struct roof_state *s, work_t *work, double flops, double e,
		 double bytes, int kernels)
{
	double tc = flops > 0.0 ? flops / (s->peak * e) : 0.0;
	double tm = bytes / s->bw;
	double wc = flops / s->peak, wm = bytes / s->hbm;
	work->s += wc > wm ? wc : wm;
	work->flops += flops;
	work->bytes += bytes;
	return (tc > tm ? tc : tm) + kernels * s->launch;
}

/* a += b, lane by lane */
static void work_add(work_t *a, const work_t *b)
{
	a->s += b->s;
	a->flops += b->flops;
	a->bytes += b->bytes;
}

/* A GEMM of m rows by a (k x n) weight read once: 2mkn FLOPs. */
static double gemm(const struct roof_state *s, work_t *work, double m, double k, double n,
		   double wmats)
{
	double flops = 2.0 * m * k * n;
	double bytes = (wmats * k * n + m * (k + n)) * s->bpp;
	return op(s, work, flops, eff(s, m), bytes, 1);
}

/* An element-wise kernel moving the given number of elements. */
static double elementwise(const struct roof_state *s, work_t *work, double elems)
{
	return op(s, work, 0.0, 1.0, elems * s->bpp, 1);
}

/* Appends a term after attention. */
static void push(struct t_terms *c, double time, work_t work)
{
	c->post[c->n_post] = time;
	c->post_w[c->n_post++] = work;
}

/* One all-reduce of T tokens x hidden among the tp GPUs, by the NCCL
 * model (the algorithm, protocol and channels NCCL picks for the size, on
 * the group's fabric): its whole time, or its latency alone when its data
 * moves on the link model (on_links), where *cap is then the rate of each
 * GPU's ring flow: the ring's bytes over the model's time past its
 * latency, so that uncontended they take the time the model gives without
 * a cluster (as the table backend's). Checked at create time, so it
 * cannot fail. */
static double allreduce_s(const struct roof_state *s, double T, bool on_links, double *cap)
{
	struct lsim_coll_est e;
	double bytes = T * s->h * s->bpp;
	*cap = 0.0;
	if (lsim_coll_time(&s->ar_topo, LSIM_COLL_ALLREDUCE, s->tp, bytes, &e) != 0)
		return 0.0;
	if (!on_links)
		return e.time_s;
	*cap = lsim_coll_ring_cap(LSIM_COLL_ALLREDUCE, s->tp, bytes, &e);
	return e.latency_s;
}

/* The vocab-parallel embedding's all-reduce of T tokens x hidden at
 * tp > 1 (vLLM's VocabParallelEmbedding), whole: once an iteration, it
 * does not move on the links. */
static double embedding_ar_s(const struct roof_state *s, double T)
{
	double cap;
	return s->tp > 1 ? allreduce_s(s, T, false, &cap) : 0.0;
}

static void token_terms(const struct roof_state *s, double T, struct t_terms *c)
{
	const double h = s->h;
	double t;
	work_t w;
	c->tokens = T;
	c->pre = 0.0;
	c->pre_w = (work_t){0};
	for (int i = 0; i < 2; i++) /* two RMSNorms */
		c->pre += op(s, &c->pre_w, 0.0, 1.0, (2.0 * T * h + h) * s->bpp, 1);
	c->pre += gemm(s, &c->pre_w, T, h, s->q + 2.0 * s->kvw, 1.0);	  /* QKV */
	c->pre += elementwise(s, &c->pre_w, 2.0 * T * (s->q + s->kvw)); /* rotary */
	c->n_post = 0;
	w = (work_t){0};
	t = gemm(s, &w, T, s->q, h, 1.0); /* O */
	push(c, t, w);
	if (!s->moe) {
		w = (work_t){0};
		t = gemm(s, &w, T, h, (s->g - 1.0) * s->f, 1.0); /* gate+up */
		push(c, t, w);
		w = (work_t){0};
		t = elementwise(s, &w, T * s->g * s->f); /* activation */
		push(c, t, w);
		w = (work_t){0};
		t = gemm(s, &w, T, s->f, h, 1.0); /* down */
		push(c, t, w);
	} else {
		double E = s->n_experts, k = s->top_k;
		double pairs_tok = T * k;			     /* token-expert pairs */
		double active = E * (1.0 - pow((E - k) / E, T));    /* distinct experts */
		double m = pairs_tok / active;			     /* rows per expert */
		double fu = (s->g - 1.0) * s->f;
		w = (work_t){0}; /* router GEMM (replicated) + top-k */
		t = op(s, &w, 2.0 * T * h * E, eff(s, T), (h * E + T * (h + E)) * s->bpp, 2);
		push(c, t, w);
		w = (work_t){0};
		t = op(s, &w, 2.0 * pairs_tok * h * fu, eff(s, m),
		       (active * h * fu + pairs_tok * (h + fu)) * s->bpp, 1);
		push(c, t, w);
		w = (work_t){0};
		t = elementwise(s, &w, pairs_tok * s->g * s->f);
		push(c, t, w);
		w = (work_t){0};
		t = op(s, &w, 2.0 * pairs_tok * s->f * h, eff(s, m),
		       (active * s->f * h + pairs_tok * (s->f + h)) * s->bpp, 1);
		push(c, t, w);
	}
	c->ar_cap = 0.0;
	if (s->tp > 1) /* after O and after down: all-reduce of T x hidden */
		push(c, 2.0 * allreduce_s(s, T, s->ar_on_links, &c->ar_cap), (work_t){0});
	c->rest = c->pre + 2 * s->launch;
	c->rest_w = c->pre_w;
	for (int i = 0; i < c->n_post; i++) {
		c->rest += c->post[i];
		work_add(&c->rest_w, &c->post_w[i]);
	}
	c->once_w = (work_t){0};
	c->emb = elementwise(s, &c->once_w, 2.0 * T * h) + embedding_ar_s(s, T);
	c->once = c->emb + op(s, &c->once_w, 0.0, 1.0, (2.0 * T * h + h) * s->bpp, 1); /* final norm */
}

/* The token-count terms for T, from the cache or computed into it. */
static const struct t_terms *terms_for(const struct roof_state *s, double T)
{
	struct t_terms *c = &s->cache[(uint64_t)T % TERM_CACHE];
	if (c->tokens != T)
		token_terms(s, T, c);
	return c;
}

static double roof_sums(const struct roof_state *s, double tokens, double seqs,
			double pairs, double kv_read, work_t *work);

/* Adds b's decodes to the sums: a token and a sequence each, scoring and
 * reading its context and the new token. */
static void add_decodes(const struct lsim_batch *b, double *tokens, double *seqs,
			double *pairs, double *kv_read)
{
	for (int i = 0; i < b->n_decode; i++) {
		double x = b->decode_ctx[i];
		*tokens += 1.0;
		*seqs += 1.0;
		*pairs += x + 1.0;
		*kv_read += x + 1.0;
	}
}

/*
 * The batch's sums: a chunk of c new tokens after p cached ones scores
 * sum_{i=1..c} (p + i) = c*p + c*(c+1)/2 query-key pairs (causal); a
 * decode is the chunk c = 1. Every sequence reads the KV of its p + c
 * tokens; the c new ones are written first.
 */
static void batch_sums(const struct lsim_batch *b, double *tokens, double *seqs,
		       double *pairs, double *kv_read)
{
	for (int i = 0; i < b->n_prefill; i++) {
		double c = b->prefill_chunk[i], x = b->prefill_ctx[i];
		if (c <= 0.0)
			continue;
		*tokens += c;
		*seqs += 1.0;
		*pairs += c * x + c * (c + 1.0) / 2.0;
		*kv_read += x + c;
	}
	add_decodes(b, tokens, seqs, pairs, kv_read);
}

/* The iteration's time in seconds; *work gets its work at peak rates. */
static double roof_eval(const struct roof_state *s, const struct lsim_batch *b,
			work_t *work)
{
	/* attention work: batch_sums */
	double tokens = 0.0, seqs = 0.0, pairs = 0.0, kv_read = 0.0;
	batch_sums(b, &tokens, &seqs, &pairs, &kv_read);
	return roof_sums(s, tokens, seqs, pairs, kv_read, work);
}

/* The times in seconds of n iterations from their batch's sums, given the
 * terms of their T tokens and their LM head (time lm, and the work once
 * per iteration with it, wo): what depends on the contexts. Iteration k
 * scores pairs + k * T query-key pairs and reads kv_read + k * T tokens
 * (a decode run; integers, exact in a double); sec[k] and work[k] get its
 * time and what it does. */
static void roof_layers(const struct roof_state *s, const struct t_terms *c,
			double T, double pairs, double kv_read, double lm,
			const work_t *wo, int32_t n, double *sec, work_t *work)
{
	/* An iteration's time and its work side by side, as the two lanes
	 * of a vector: each lane's operations are the scalar ones (IEEE, lane
	 * by lane), in the same order, so each result is the same double;
	 * the pair costs one instruction where the two took two. */
	typedef double v2d __attribute__((vector_size(16)));
	typedef long long v2l __attribute__((vector_size(16)));
	/* the parts of the attention terms that stay (the same products, in
	 * the same order, as written out in full) */
	const double flops_per_pair = 4.0 * s->d * s->heads;
	const double kv_w = 2.0 * s->kvw, q_elems = 2.0 * T * s->q;
	/* KV-cache write + attention, op(s, &wl, flops, s->mfu_max, bytes,
	 * 2): compute time and work divide the FLOPs by peak * mfu_max and
	 * peak, memory time and work the bytes by bw and hbm; its two
	 * launches are in the rest of the layer's terms, summed once per
	 * token count (t_terms.rest) */
	const v2d flop_div = {s->peak * s->mfu_max, s->peak}, byte_div = {s->bw, s->hbm};
	const v2d rest = {c->rest, c->rest_w.s};
	const v2d layers = {s->n_layers, s->n_layers};
	/* with a host floor the CPU overhead comes after max(GPU, host) */
	const v2d once = {s->host > 0.0 ? c->once + lm : c->once + lm + s->cpu, wo->s};
	/* and its FLOPs and bytes, the same way */
	const v2d rest_fb = {c->rest_w.flops, c->rest_w.bytes}, once_fb = {wo->flops, wo->bytes};
	for (int32_t k = 0; k < n; k++) {
		/* QK^T and PV: 2 FLOPs per multiply-add, d per pair, each head */
		double flops = flops_per_pair * pairs;
		double bytes = (kv_w * (kv_read + T) + q_elems) * s->bpp;
		/* (no FLOPs: no compute time; 0 / x is that 0) */
		v2d tc = (v2d){flops, flops} / flop_div, tm = (v2d){bytes, bytes} / byte_div;
		v2l over = tc > tm; /* max(tc, tm), tm on ties, lane by lane */
		v2d att = (v2d)((over & (v2l)tc) | (~over & (v2l)tm));
		v2d out = layers * (att + rest) + once;
		v2d fb = layers * ((v2d){flops, bytes} + rest_fb) + once_fb;
		/* the host issues the kernels while the GPU runs them */
		sec[k] = s->host > 0.0 ? (out[0] > s->host ? out[0] : s->host) + s->cpu : out[0];
		work[k] = (work_t){out[1], fb[0], fb[1]};
		pairs += T;
		kv_read += T;
	}
}

/* The LM head over the last tokens of seqs sequences: its time; adds its
 * work to *wo. At tp > 1 each GPU computes its share of the vocabulary
 * and vLLM's LogitsProcessor all-gathers the logits (seqs x vocab x dtype
 * bytes) on every GPU, by the NCCL model, whole (once an iteration, not
 * on the links). */
static double lm_head(const struct roof_state *s, double seqs, work_t *wo)
{
	double t = gemm(s, wo, seqs, s->h, s->vocab_r, 1.0);
	struct lsim_coll_est e;
	if (s->tp > 1 && lsim_coll_time(&s->ar_topo, LSIM_COLL_ALLGATHER, s->tp,
					seqs * s->logit_b, &e) == 0)
		t += e.time_s;
	return t;
}

/* The iteration's time in seconds from its batch's sums (roof_eval). */
static double roof_sums(const struct roof_state *s, double tokens, double seqs,
			double pairs, double kv_read, work_t *work)
{
	*work = (work_t){0};
	if (tokens <= 0.0)
		return s->cpu;
	const struct t_terms *c = terms_for(s, tokens);
	work_t wo = c->once_w;
	double lm = lm_head(s, seqs, &wo);
	double sec;
	roof_layers(s, c, tokens, pairs, kv_read, lm, &wo, 1, &sec, work);
	return sec;
}

/* An iteration of s seconds in ns, at least 1. */
static lsim_time iter_ns(double s)
{
	lsim_time t = lsim_time_ns_of_s(s);
	return t < 1 ? 1 : t;
}

static lsim_time roof_iter_time(const struct lsim_perf *p, const struct lsim_batch *b)
{
	work_t work;
	return iter_ns(roof_eval(p->state, b, &work));
}

static work_t roof_iter_work(const struct lsim_perf *p, const struct lsim_batch *b)
{
	work_t work;
	roof_eval(p->state, b, &work);
	return work;
}

static lsim_time roof_iter_eval(const struct lsim_perf *p, const struct lsim_batch *b,
				work_t *work)
{
	return iter_ns(roof_eval(p->state, b, work));
}

/* Decode steps one after another: each context grows by a token, so
 * the sums grow by the batch's size (integers, exact in a double: the
 * same values roof_eval adds up). */
static void roof_decode_run(const struct lsim_perf *p, const struct lsim_batch *b,
			    int32_t n, lsim_time *t, work_t *w)
{
	const struct roof_state *s = p->state;
	double tokens = 0.0, seqs = 0.0, pairs = 0.0, kv_read = 0.0;
	add_decodes(b, &tokens, &seqs, &pairs, &kv_read);
	if (tokens <= 0.0) {
		for (int32_t k = 0; k < n; k++)
			t[k] = iter_ns(roof_sums(s, tokens, seqs, pairs, kv_read, &w[k]));
		return;
	}
	/* the token-count terms and the LM head are the same in every step */
	const struct t_terms *c = terms_for(s, tokens);
	work_t wo = c->once_w;
	double lm = lm_head(s, seqs, &wo);
	for (int32_t k0 = 0; k0 < n; k0 += 64) {
		int32_t m = n - k0 < 64 ? n - k0 : 64;
		double sec[64];
		roof_layers(s, c, tokens, pairs + k0 * tokens, kv_read + k0 * tokens, lm, &wo,
			    m, sec, w + k0);
		for (int32_t k = 0; k < m; k++)
			t[k0 + k] = iter_ns(sec[k]);
	}
}

/* A pipeline stage's share of the iteration (perf.h): `layers` decoder
 * layers (each term as roof_layers adds it for one iteration), the
 * embedding gather and the CPU overhead on the first stage, the final
 * norm and the LM head on the last. */
static lsim_time roof_stage_time(const struct lsim_perf *p, const struct lsim_batch *b,
				 int32_t layers, bool first, bool last)
{
	const struct roof_state *s = p->state;
	double tokens = 0.0, seqs = 0.0, pairs = 0.0, kv_read = 0.0;
	batch_sums(b, &tokens, &seqs, &pairs, &kv_read);
	if (tokens <= 0.0)
		return first ? iter_ns(s->cpu) : 0;
	const struct t_terms *c = terms_for(s, tokens);
	double flops = 4.0 * s->d * s->heads * pairs;
	double bytes = (2.0 * s->kvw * (kv_read + tokens) + 2.0 * tokens * s->q) * s->bpp;
	double tc = flops / (s->peak * s->mfu_max), tm = bytes / s->bw;
	double sec = (double)layers * ((tc > tm ? tc : tm) + c->rest);
	work_t w = {0};
	if (first)
		sec += c->emb;
	if (last)
		sec += (c->once - c->emb) + lm_head(s, seqs, &w);
	/* the stage's host issues its own kernels (its layers', the
	 * embedding on the first, the final norm and LM head on the last)
	 * while its GPU runs them, as the whole iteration does */
	double host = s->host_k * ((double)layers * s->layer_k + (first ? 1.0 : 0.0) +
				   (last ? 2.0 : 0.0));
	if (host > sec)
		sec = host;
	if (first)
		sec += s->cpu;
	return sec > 0.0 ? iter_ns(sec) : 0;
}

double lsim_perf_roofline_kernels(const struct lsim_model_arch *m)
{
	return m->n_layers * (m->n_experts > 0 ? 12.0 : 10.0) + 3.0;
}

double lsim_perf_allreduce_bytes(const struct lsim_model_arch *m, int tp,
				 int64_t tokens)
{
	if (tp <= 1)
		return 0.0;
	double per = (double)tokens * m->hidden * m->bytes_per_param;
	return m->n_layers * 2.0 * 2.0 * (tp - 1.0) / tp * per;
}

static void roof_destroy(struct lsim_perf *p)
{
	if (!p)
		return;
	if (p->state)
		free(((struct roof_state *)p->state)->cache);
	free(p->state);
	free(p);
}

/* With the all-reduces on the links: the cap of each GPU's ring flow for
 * a batch of tokens (allreduce_s), from the token-count cache. */
static double roof_ring_rate_cap(const struct lsim_perf *p, int64_t tokens)
{
	const struct roof_state *s = p->state;
	if (!s->ar_on_links || s->tp < 2 || tokens < 1)
		return 0.0;
	return terms_for(s, (double)tokens)->ar_cap;
}

static const struct lsim_perf_ops roof_ops = {
	.name = "roofline",
	.iter_time = roof_iter_time,
	.iter_work = roof_iter_work,
	.iter_eval = roof_iter_eval,
	.decode_run = roof_decode_run,
	.destroy = roof_destroy,
	.stage_time = roof_stage_time,
	.ring_rate_cap = roof_ring_rate_cap,
};

static bool pos(double v)
{
	return v > 0.0 && isfinite(v);
}

int lsim_perf_roofline_create(const struct lsim_model_arch *m,
			      const struct lsim_gpu_profile *g,
			      const struct lsim_roofline_params *prm,
			      struct lsim_perf **out, struct lsim_diag *d)
{
	if (!out)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "no output handle");
	*out = NULL;
	if (!m || !g || !prm)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "missing model, GPU or parameters");
	const char *mn = m->name, *gn = g->name;
	if (m->n_layers < 1 || m->hidden < 1 || m->n_heads < 1 || m->intermediate < 1 ||
	    m->vocab < 1 || m->n_kv_heads < 0 || m->head_dim < 0)
		return lsim_diag_set(d, LSIM_EINVAL, mn, 0, 0, "model",
				     "model %s: layers, hidden, heads, intermediate and vocab must be >= 1",
				     mn);
	if (m->bytes_per_param < 1)
		return lsim_diag_set(d, LSIM_EINVAL, mn, 0, 0, "bytes_per_param",
				     "model %s: bytes per parameter %d must be >= 1", mn,
				     m->bytes_per_param);
	if (m->n_experts < 0 || (m->n_experts > 0 && (m->experts_per_token < 1 ||
						      m->experts_per_token > m->n_experts)))
		return lsim_diag_set(d, LSIM_EINVAL, mn, 0, 0, "experts_per_token",
				     "model %s: experts per token %d must be in [1, %d]", mn,
				     m->experts_per_token, m->n_experts);
	if (!pos(g->bf16_flops) || !pos(g->hbm_bw))
		return lsim_diag_set(d, LSIM_EINVAL, gn, 0, 0, "bf16_tflops",
				     "GPU %s: peak FLOP/s and HBM bandwidth must be > 0", gn);
	if (!pos(g->mfu_max) || g->mfu_max > 1.0 || !pos(g->mbu) || g->mbu > 1.0)
		return lsim_diag_set(d, LSIM_EINVAL, gn, 0, 0, "mfu_max",
				     "GPU %s: mfu_max %g and mbu %g must be in (0, 1]", gn,
				     g->mfu_max, g->mbu);
	if (!(g->mfu_half_tokens >= 0.0) || !(g->launch_s >= 0.0) || !(g->host_issue_s >= 0.0) ||
	    !isfinite(g->host_issue_s) || !isfinite(g->mfu_half_tokens) || !isfinite(g->launch_s))
		return lsim_diag_set(d, LSIM_EINVAL, gn, 0, 0, "mfu_half_tokens",
				     "GPU %s: mfu_half_tokens, launch and host issue latency must be >= 0",
				     gn);
	if (prm->tp < 1)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "tp",
				     "tensor-parallel degree %d must be >= 1", prm->tp);
	if (!(prm->cpu_overhead_s >= 0.0) || !isfinite(prm->cpu_overhead_s))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "cpu_overhead",
				     "CPU overhead %g s must be finite and >= 0", prm->cpu_overhead_s);
	struct lsim_coll_topo topo;
	if (prm->coll)
		topo = *prm->coll;
	else
		lsim_coll_topo_from_profile(g, &topo);
	struct lsim_coll_est e;
	if (prm->tp > 1 && !pos(topo.pcie_bw))
		return lsim_diag_set(d, LSIM_EINVAL, gn, 0, 0, "pcie_bw",
				     "GPU %s: tensor parallelism needs pcie_bw > 0 for the "
				     "all-reduces' paths", gn);
	if (prm->tp > 1 && (lsim_coll_time(&topo, LSIM_COLL_ALLREDUCE, prm->tp, 0.0, &e) != 0 ||
			    lsim_coll_time(&topo, LSIM_COLL_ALLGATHER, prm->tp, 0.0, &e) != 0))
		return lsim_diag_set(d, LSIM_EINVAL, gn, 0, 0,
				     topo.fabric == LSIM_FABRIC_MESH ? "nvlink_links" : "tp",
				     "GPU %s: %d GPUs of tensor parallelism do not fit the GPU's "
				     "fabric (%s%s) for their all-reduces and all-gather", gn, prm->tp,
				     lsim_fabric_name(topo.fabric),
				     topo.fabric == LSIM_FABRIC_MESH ? ": more GPUs than links + 1"
								     : "");

	struct roof_state *s = calloc(1, sizeof *s);
	struct lsim_perf *p = calloc(1, sizeof *p);
	struct t_terms *cache = calloc(TERM_CACHE, sizeof *cache);
	if (!s || !p || !cache) {
		free(s);
		free(p);
		free(cache);
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	}
	double tp = prm->tp;
	int kvh = m->n_kv_heads > 0 ? m->n_kv_heads : m->n_heads;
	s->n_layers = m->n_layers;
	s->tp = prm->tp;
	s->ar_on_links = prm->allreduce_on_links;
	s->peak = g->bf16_flops;
	s->mfu_max = g->mfu_max;
	s->mfu_half = g->mfu_half_tokens;
	s->bw = g->hbm_bw * g->mbu;
	s->hbm = g->hbm_bw;
	s->launch = g->launch_s;
	s->ar_topo = topo;
	s->cpu = prm->cpu_overhead_s;
	/* the kernels the host issues: the launches counted per operator, 10
	 * per layer (12 with MoE) and 3 once (embedding, final norm, LM head) */
	s->host = g->host_issue_s * lsim_perf_roofline_kernels(m);
	s->host_k = g->host_issue_s;
	s->layer_k = m->n_experts > 0 ? 12.0 : 10.0;
	s->h = m->hidden;
	s->bpp = m->bytes_per_param;
	s->d = m->head_dim > 0 ? m->head_dim : (double)m->hidden / m->n_heads;
	s->heads = m->n_heads / tp;
	s->q = s->heads * s->d;
	/* KV heads are split across the group, replicated once tp exceeds them */
	s->kvw = (kvh / tp > 1.0 ? kvh / tp : 1.0) * s->d;
	s->f = m->intermediate / tp;
	s->g = m->gated_mlp ? 3.0 : 2.0;
	s->vocab_r = m->vocab / tp;
	/* the shards vLLM gathers: the vocabulary padded to 64 */
	s->logit_b = lsim_memplan_padded_vocab(m) * s->bpp;
	s->moe = m->n_experts > 0;
	s->n_experts = m->n_experts;
	s->top_k = m->experts_per_token;
	s->cache = cache;
	p->ops = &roof_ops;
	p->state = s;
	*out = p;
	return 0;
}
