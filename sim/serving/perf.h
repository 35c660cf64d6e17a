/*
 * perf.h - the performance model: how long one engine iteration of a batch
 * takes on one serving instance. Two backends behind one interface:
 *   roofline - FLOPs and bytes from the model architecture and a hardware
 *              profile, with efficiency curves, TP all-reduce and CPU
 *              overhead;
 *   table    - measured per-layer latencies (LLMServingSim profiler CSVs:
 *              dense.csv, attention.csv, per_sequence.csv, moe.csv),
 *              interpolated.
 * Both precompute at create time; lsim_perf_iter_time is on the hot path
 * and must not allocate.
 */
#ifndef LLMSIM_PERF_H
#define LLMSIM_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/hw.h"
#include "llmsim/llmsim.h"

/*
 * One iteration's batch, as the instance scheduler formed it.
 * Prefill entries: a chunk of new prompt tokens for a sequence whose first
 * prefill_ctx[i] tokens already have KV (earlier chunks or prefix-cache
 * hits). Decode entries: one new token for a sequence whose context (KV
 * length before this token) is decode_ctx[i].
 */
struct lsim_batch {
	int n_prefill;
	const int32_t *prefill_chunk;
	const int32_t *prefill_ctx;
	int n_decode;
	const int32_t *decode_ctx;
	/* Expert parallelism in lockstep (data-parallel ranks of an MoE
	 * model, docs/parallelism.md): the tokens of every rank's batch in
	 * this step, whose expert work is shared out over the EP group, and
	 * the most tokens one rank dispatches (the dispatch waits for it).
	 * 0: this batch alone. */
	int64_t moe_tokens, a2a_tokens;
	/* LoRA (docs/lora.md): the tokens of requests with an adapter and
	 * the batch's distinct adapters. The backends leave them out; the
	 * instance adds their roofline term to the step (instance.c). */
	int64_t lora_tokens;
	int32_t n_lora;
};

struct lsim_perf;

/*
 * What one iteration does on each GPU of its tensor-parallel group, from
 * the model's shape (the roofline's operator counts, docs/perf-model.md):
 *   s      its work at peak rates, in seconds: the sum over its operators
 *          of max(FLOPs / peak FLOP/s, bytes / peak HBM bandwidth); its
 *          ratio to the iteration time is the GPU's utilisation, what its
 *          power follows. Negative: unknown.
 *   flops  its model FLOPs (GEMMs, attention, LM head);
 *   bytes  the bytes its operators move through HBM (weights, KV read
 *          and written, activations).
 */
struct lsim_iter_work {
	double s;
	double flops;
	double bytes;
};

struct lsim_perf_ops {
	const char *name;
	/* Iteration time in ns; > 0 for a non-empty batch. */
	lsim_time (*iter_time)(const struct lsim_perf *p,
			       const struct lsim_batch *b);
	void (*destroy)(struct lsim_perf *p);
	/* Optional: what the iteration does (struct lsim_iter_work). */
	struct lsim_iter_work (*iter_work)(const struct lsim_perf *p,
					   const struct lsim_batch *b);
	/* Optional: iter_time and iter_work in one pass over the batch. */
	lsim_time (*iter_eval)(const struct lsim_perf *p, const struct lsim_batch *b,
			       struct lsim_iter_work *work);
	/* Optional: iter_eval of n successive steps of a batch of decodes
	 * only (n_prefill 0), step k's contexts k tokens longer than b's:
	 * exactly the values iter_eval gives for each, in t[k] and w[k]. */
	void (*decode_run)(const struct lsim_perf *p, const struct lsim_batch *b,
			   int32_t n, lsim_time *t, struct lsim_iter_work *w);
	/* Optional: the time in ns of one pipeline stage's part of the
	 * iteration (docs/parallelism.md, "Pipeline parallelism"): `layers`
	 * decoder layers, each with its tensor-parallel collectives; on the
	 * `first` stage the embedding and the CPU overhead, on the `last` the
	 * final norm, the LM head and the sampler. Over the stages of a split
	 * (layers adding up to the model's, one first, one last) the times
	 * add up to iter_time: exactly for the table, to within a ns a stage
	 * for the roofline (each stage's seconds are rounded on their own).
	 * May be 0 for an empty stage. */
	lsim_time (*stage_time)(const struct lsim_perf *p, const struct lsim_batch *b,
				int32_t layers, bool first, bool last);
	/* Optional: the most bytes/s each GPU's flow of a step's ring
	 * all-reduces may take when they move on the links (a batch of
	 * `tokens`), so that alone on its links the data moves as fast as the
	 * backend's own collective model says and contention only slows it;
	 * 0: the links' bandwidth alone. */
	double (*ring_rate_cap)(const struct lsim_perf *p, int64_t tokens);
	/* Optional: with expert parallelism on the links, the bytes each
	 * rank's GPU sends each other rank's in one step's dispatches and
	 * combines (all-gathers and reduce-scatters) when the largest rank
	 * runs `tokens`, and in *cap the most bytes/s each such flow may
	 * take (as ring_rate_cap); 0: they are in the step's time. */
	double (*a2a_pair_bytes)(const struct lsim_perf *p, int64_t tokens, double *cap);
};

struct lsim_perf {
	const struct lsim_perf_ops *ops;
	void *state;
	/* holders besides the creator (lsim_perf_share); a backend that
	 * callocs its handle starts at 0 */
	int32_t extra_holders;
};

static inline lsim_time lsim_perf_iter_time(const struct lsim_perf *p,
					    const struct lsim_batch *b)
{
	return p->ops->iter_time(p, b);
}

/* What the iteration does (iter_work); s = -1 (and no FLOPs or bytes) if
 * the backend does not know it. */
static inline struct lsim_iter_work lsim_perf_iter_work(const struct lsim_perf *p,
							 const struct lsim_batch *b)
{
	if (p && p->ops->iter_work)
		return p->ops->iter_work(p, b);
	return (struct lsim_iter_work){.s = -1.0};
}

/* The iteration's time, and what it does in *work (as lsim_perf_iter_work). */
static inline lsim_time lsim_perf_iter_eval(const struct lsim_perf *p,
					    const struct lsim_batch *b,
					    struct lsim_iter_work *work)
{
	if (p->ops->iter_eval)
		return p->ops->iter_eval(p, b, work);
	*work = lsim_perf_iter_work(p, b);
	return lsim_perf_iter_time(p, b);
}

/* ring_rate_cap, or 0 where the backend has none. */
static inline double lsim_perf_ring_rate_cap(const struct lsim_perf *p, int64_t tokens)
{
	return p && p->ops->ring_rate_cap ? p->ops->ring_rate_cap(p, tokens) : 0.0;
}

/* a2a_pair_bytes, or 0 (and *cap 0) where the backend has none. */
static inline double lsim_perf_a2a_pair_bytes(const struct lsim_perf *p, int64_t tokens,
					      double *cap)
{
	*cap = 0.0;
	return p && p->ops->a2a_pair_bytes ? p->ops->a2a_pair_bytes(p, tokens, cap) : 0.0;
}

/* Drops a holder; the last one frees the model. Accepts NULL. */
void lsim_perf_destroy(struct lsim_perf *p);
/* Adds a holder and returns p: instances of one group share one model
 * (a pure function of the batch, so sharing changes no result, and its
 * caches serve every replica). */
struct lsim_perf *lsim_perf_share(struct lsim_perf *p);

struct lsim_coll_topo;

struct lsim_roofline_params {
	int tp;		     /* tensor-parallel degree */
	double cpu_overhead_s; /* fixed CPU (scheduler + sampler) time per iteration */
	/* The all-reduces' data moves as flows on the link model (the
	 * instance adds them after the compute): leave their transfer time
	 * out, keep their latency. */
	bool allreduce_on_links;
	/* The fabric the tensor-parallel all-reduces cross, timed by the NCCL
	 * model (sim/cluster/collective.h); NULL: one node of the profile's
	 * GPUs (lsim_coll_topo_from_profile). */
	const struct lsim_coll_topo *coll;
};

/* The kernels one roofline iteration launches (and its host issues): 10 per
 * decoder layer, 12 with MoE, and 3 once (embedding, final norm, LM head). */
double lsim_perf_roofline_kernels(const struct lsim_model_arch *m);

/* Bytes each GPU of a tensor-parallel group sends in one iteration's ring
 * all-reduces (two per layer of tokens x hidden): 0 for tp 1. */
double lsim_perf_allreduce_bytes(const struct lsim_model_arch *m, int tp,
				 int64_t tokens);

int lsim_perf_roofline_create(const struct lsim_model_arch *m,
			      const struct lsim_gpu_profile *g,
			      const struct lsim_roofline_params *prm,
			      struct lsim_perf **out, struct lsim_diag *d);

struct lsim_table_params {
	int tp;		     /* selects the tp<N>/ subfolder */
	int n_layers;	     /* decoder layers the per-layer times are multiplied by */
	double cpu_overhead_s; /* added per iteration */
	/* Tensor-parallel communication (tp > 1 and coll set): two all-reduces
	 * per layer of tokens x act_bytes (after attention's output projection
	 * and after the MLP), timed by tp<N>/allreduce.csv (bytes,time_us)
	 * when the folder has one, else by the NCCL model on coll's fabric
	 * (sim/cluster/collective.h). NULL: the table's kernels only. */
	const struct lsim_coll_topo *coll;
	double act_bytes;    /* bytes per token all-reduced: hidden x dtype bytes */
	/* bytes per sequence of the logits all-gathered once an iteration
	 * (vLLM's vocab-parallel LM head): the vocabulary padded as vLLM
	 * pads it (lsim_memplan_padded_vocab) x dtype bytes; with coll and
	 * tp > 1 both must be > 0. The vocab-parallel embedding's all-reduce
	 * of tokens x act_bytes is charged once an iteration too. */
	double logit_bytes;
	/* The model's all-reduces move as flows on the link model (the
	 * instance adds them after the compute): charge their latency only.
	 * Not with a measured allreduce.csv (lsim_perf_table_has_allreduce). */
	bool coll_on_links;
	/* Expert parallelism: the experts are split over ep GPUs (data-
	 * parallel ranks x tp); each holds n_experts / ep of them, runs the
	 * tokens the gate sends there and takes part in each layer's
	 * dispatch and combine, as vLLM's default allgather_reducescatter
	 * backend runs them (an all-gather and a reduce-scatter of every
	 * rank's tokens), on coll's fabric. 0 or 1: none. */
	int ep;
	/* Their data moves as flows between the ranks' GPUs on the
	 * link model (the data-parallel group adds them after the compute):
	 * charge their latency only. */
	bool ep_on_links;
	/* What the tables must have been measured for (NULL: not checked):
	 * the folder's meta.yaml `model:` must name this model
	 * (lsim_model_same); its `gpu:` must not be a device that another
	 * profile of gpu_dir claims than the one named gpu
	 * (lsim_gpu_profile_match; a device no profile claims is taken as
	 * the caller's); an MoE model needs tp<N>/moe.csv and a dense one
	 * must not have it; and its `gpu:` must be `device` (a CUDA device
	 * name, a run log's; NULL: not checked) */
	const struct lsim_model_arch *model;
	const char *gpu, *gpu_dir;
	const char *device;
};

/* dir is the .../<GPU>/<model>/<variant> folder holding tp<N>/ subfolders. */
int lsim_perf_table_create(const char *dir, const struct lsim_table_params *prm,
			   struct lsim_perf **out, struct lsim_diag *d);

/* Whether dir's tp<N>/ folder has a measured allreduce.csv (which then
 * times the table's all-reduces, and none moves on the links). */
bool lsim_perf_table_has_allreduce(const char *dir, int tp);

#endif
