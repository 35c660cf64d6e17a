/*
 * instance.c - a serving instance (one model replica on a tensor-parallel
 * group), modelled on vLLM's V1 scheduler: continuous batching under a
 * token budget (max_num_batched_tokens) and a sequence cap (max_num_seqs),
 * chunked prefill, a paged KV cache with prefix caching, and preemption by
 * recompute when blocks run out (the newest running request is preempted
 * and goes back to the front of the queue; no new request is admitted in a
 * step that preempted). Also a plain multi-server mode with drawn service
 * times, used to validate the engine against queueing theory.
 */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


#include "serving/memplan.h"
#include "serving/instance_internal.h"

static bool room_for_step(const struct lsim_instance *in);
static void kick(struct lsim_engine *eng, void *subject, uint64_t arg);
static void kv_evicted(void *ctx, uint64_t hash);
static void service_end(struct lsim_engine *eng, void *subject, uint64_t arg);


/* ---- the waiting queue ----
 * A binary heap ordered by (preempted first, key, insertion sequence).
 * Normal requests take their key from the queue policy; preempted ones go
 * before all of them, the most recently preempted first, which for fcfs is
 * exactly vLLM's "prepend to the waiting deque". O(log n) per operation. */

struct lsim_wait_entry {
	double key;
	uint64_t seq;
	int32_t req;
	int32_t normal; /* 0 = preempted, 1 = normal */
};

int32_t lsim_instance_waiting(const struct lsim_instance *in, size_t k)
{
	return in->wait[k].req;
}

static bool wait_less(const struct lsim_wait_entry *a,
		      const struct lsim_wait_entry *b)
{
	if (a->normal != b->normal)
		return a->normal < b->normal;
	if (a->key != b->key)
		return a->key < b->key;
	return a->seq < b->seq;
}


/* Places e in the waiting heap, its place in the order kept (room made
 * by the caller; LoRA puts back there a request skipped for a step). */
static void wait_place(struct lsim_instance *in, struct lsim_wait_entry e)
{
	size_t i = in->wait_len++;
	lsim_instance_touch(in);
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!wait_less(&e, &in->wait[parent]))
			break;
		in->wait[i] = in->wait[parent];
		i = parent;
	}
	in->wait[i] = e;
}

static int wait_insert(struct lsim_instance *in, int32_t r, int32_t normal,
		       double key)
{
	lsim_inst_macro_cut(in); /* the next step may take it */
	if (lsim_grow((void **)&in->wait, &in->wait_cap, in->wait_len + 1,
		 sizeof *in->wait) != 0)
		return LSIM_ENOMEM;
	wait_place(in, (struct lsim_wait_entry){key, in->wait_seq++, r, normal});
	return 0;
}

static int wait_push_back(struct lsim_instance *in, int32_t ri)
{
	double key;
	int rc = in->sv->hooks->queue_key(in->sv->owner, ri, &key);
	if (rc)
		return rc;
	return wait_insert(in, ri, 1, key);
}

static int wait_push_front(struct lsim_instance *in, int32_t ri)
{
	return wait_insert(in, ri, 0, -(double)in->wait_seq);
}

static int32_t wait_front(const struct lsim_instance *in)
{
	return in->wait[0].req;
}

static void wait_pop_front(struct lsim_instance *in)
{
	struct lsim_wait_entry last = in->wait[--in->wait_len];
	lsim_instance_touch(in);
	size_t n = in->wait_len, i = 0;
	if (n == 0)
		return;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && wait_less(&in->wait[c + 1], &in->wait[c]))
			c++;
		if (!wait_less(&in->wait[c], &last))
			break;
		in->wait[i] = in->wait[c];
		i = c;
	}
	in->wait[i] = last;
}

/* ---- lifecycle ---- */

static void init_common(struct lsim_instance *in, struct lsim_serving *sim,
			int32_t id, const struct lsim_gpu_profile *gpu)
{
	memset(in, 0, sizeof *in);
	in->id = id;
	in->sv = sim;
	in->gpu = gpu;
	in->tp = 1;
	in->pp = 1;
	in->n_gpus = 1;
	in->node = -1;
	in->start = 0;
	in->ready = 0;
	in->stop = -1;
	in->state = LSIM_INST_READY; /* warm unless a cold start is set up */
	in->gpu0 = -1;
	in->failed_at = -1;
	in->m_next = LSIM_TIME_MAX;
	in->m_slot = -1;
	/* power of its GPUs, priced at the profile's rate until the scenario
	 * gives an offer; a profile-less test instance draws nothing */
	struct lsim_power_model pm;
	double alpha = sim->power_alpha > 0 ? sim->power_alpha : 1.0;
	if (!gpu || lsim_power_model_init(&pm, gpu->idle_w, gpu->tdp_w >= gpu->idle_w
							? gpu->tdp_w : gpu->idle_w,
					  alpha, NULL) != 0)
		lsim_power_model_init(&pm, 0, 0, 1.0, NULL);
	lsim_energy_acc_init(&in->energy, &pm, 1, sim->pue >= 1 ? sim->pue : 1.0,
			     sim->carbon_g_per_kwh, sim->carbon, NULL);
	in->billing.price_per_hour = gpu ? gpu->price_per_hour : 0;
}

int lsim_instance_init(struct lsim_instance *in, struct lsim_serving *sim,
		       int32_t id, const struct lsim_engine_cfg *cfg,
		       const struct lsim_gpu_profile *gpu,
		       const struct lsim_model_arch *model, int32_t tp,
		       struct lsim_perf *perf, struct lsim_diag *d)
{
	init_common(in, sim, id, gpu);
	in->cfg = *cfg;
	in->model = model;
	in->tp = tp;
	in->pp = cfg->pp > 1 ? (int32_t)cfg->pp : 1;
	if ((cfg->io_in_bytes > 0 || cfg->io_out_bytes > 0) && (!sim->net || tp > 1 || in->pp > 1))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "io_in_bytes",
				     "a step's inputs and outputs move over the cluster's links "
				     "for an instance of tp 1 and pp 1 in a scenario with a "
				     "cluster: set io_in_bytes and io_out_bytes to 0 here");
	if (cfg->cpu_offload_gb > 0 && (!sim->net || in->pp > 1))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "cpu_offload_gb",
				     "weight offload copies the weights over the cluster's "
				     "PCIe links at every step of an instance of pp 1: add a "
				     "cluster and use pp 1, or set cpu_offload_gb: 0");
	if (cfg->kv_offload && (!sim->net || !cfg->enable_prefix_caching)) {
		lsim_perf_destroy(perf);
		in->perf = NULL;
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "kv_offload",
				     "KV offload copies prefix-cache blocks over the cluster's "
				     "PCIe links: it needs a cluster section and "
				     "enable_prefix_caching: true; or set kv_offload: none");
	}
	if (cfg->enable_lora && (!sim->net || in->pp > 1 || cfg->kv_offload ||
				 cfg->preemption_mode == LSIM_PREEMPT_SWAP ||
				 cfg->lora_adapter_bytes <= 0)) {
		lsim_perf_destroy(perf);
		in->perf = NULL;
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "enable_lora",
				     "LoRA adapters are copied over the cluster's links to an "
				     "instance of pp 1 without kv_offload or swap preemption, "
				     "of a dense model: add a cluster, use pp 1, "
				     "preemption_mode: recompute and kv_offload: none, or set "
				     "enable_lora: false");
	}
	in->n_gpus = tp * in->pp;
	in->energy.gpus = in->n_gpus;
	in->billing.price_per_hour *= in->n_gpus;
	in->perf = perf;
	in->max_model_len = cfg->max_model_len > 0 ? cfg->max_model_len
						   : model->max_context;
	int64_t blocks = cfg->num_gpu_blocks;
	if (blocks <= 0) {
		/* vLLM's plan (memplan.h): memory x utilisation - weights -
		 * activation peak - non-torch memory, in blocks, least over the
		 * ranks. The scenario refuses a plan short of min_kv_tokens before
		 * this; here only a direct caller can meet a plan without a block. */
		struct lsim_memplan_in mi = lsim_memplan_in_for(cfg, gpu, model, tp);
		struct lsim_memplan plan;
		lsim_memplan_compute(&mi, &plan);
		blocks = plan.blocks;
		if (blocks < 1) {
			char why[768];
			const char *key = lsim_memplan_explain(&mi, &plan, cfg->block_size,
							       why, sizeof why);
			lsim_perf_destroy(perf);
			in->perf = NULL;
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
					     "model %s does not fit on %d x %s: %s", model->name,
					     (int)in->n_gpus, gpu->name, why);
		}
	}
	if (blocks > LSIM_KV_BLOCKS_MAX) { /* check and validate refuse it first */
		lsim_perf_destroy(perf);
		in->perf = NULL;
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "num_gpu_blocks",
				     "%lld KV blocks is more than one instance holds (at "
				     "most %d): set num_gpu_blocks or a larger block_size",
				     (long long)blocks, LSIM_KV_BLOCKS_MAX);
	}
	in->kv = lsim_kv_create((int32_t)blocks, cfg->enable_prefix_caching);
	in->kv_blocks = (int32_t)blocks;
	lsim_instance_touch(in);
	in->kv_block_bytes = lsim_model_kv_bytes_per_token(model) * (double)in->cfg.block_size;
	size_t cap = (size_t)cfg->max_num_seqs + 1;
	in->sched = malloc(cap * sizeof *in->sched);
	in->pf_chunk = malloc(cap * sizeof *in->pf_chunk);
	in->pf_ctx = malloc(cap * sizeof *in->pf_ctx);
	in->dec_ctx = malloc(cap * sizeof *in->dec_ctx);
	in->run = malloc(cap * sizeof *in->run);
	in->sched_n = malloc(cap * sizeof *in->sched_n);
	in->run_cap = cap;
	if (in->kv && cfg->kv_offload) {
		double host_blocks = floor(cfg->kv_offload_space / in->kv_block_bytes);
		if (host_blocks < 1) {
			double block = in->kv_block_bytes;
			lsim_instance_release(in);
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "kv_offload_space",
					     "%.0f bytes (per instance) hold no KV block of %s "
					     "(%.0f bytes); give at least that much per GPU",
					     cfg->kv_offload_space, model->name, block);
		}
		in->kvhost = lsim_kvhost_create((int64_t)fmin(host_blocks, 1e9));
		if (!in->kvhost) {
			lsim_instance_release(in);
			return LSIM_ENOMEM;
		}
		lsim_kv_on_evict(in->kv, kv_evicted, in);
	}
	if (cfg->enable_lora) {
		in->lora = lsim_lora_create((int32_t)cfg->max_loras,
					    (int32_t)(cfg->max_cpu_loras > cfg->max_loras
							      ? cfg->max_cpu_loras
							      : cfg->max_loras));
		if (!in->lora) {
			lsim_instance_release(in);
			return LSIM_ENOMEM;
		}
	}
	if (!in->kv || !in->sched || !in->pf_chunk || !in->pf_ctx ||
	    !in->dec_ctx || !in->run || !in->sched_n) {
		lsim_instance_release(in);
		return LSIM_ENOMEM;
	}
	if (in->pp > 1) {
		size_t pp = (size_t)in->pp;
		in->batches = calloc(pp, sizeof *in->batches);
		in->stage_holder = malloc(pp * sizeof *in->stage_holder);
		in->stage_next = calloc(pp, sizeof *in->stage_next);
		bool ok = in->batches && in->stage_holder && in->stage_next;
		for (size_t k = 0; ok && k < pp; k++) {
			in->stage_holder[k] = -1;
			in->batches[k].reqs = malloc(cap * sizeof *in->batches[k].reqs);
			in->batches[k].toks = malloc(cap * sizeof *in->batches[k].toks);
			in->batches[k].stage_ns = malloc(pp * sizeof *in->batches[k].stage_ns);
			ok = in->batches[k].reqs && in->batches[k].toks && in->batches[k].stage_ns;
		}
		if (!ok) {
			lsim_instance_release(in);
			return LSIM_ENOMEM;
		}
		/* the stages' send/recv and all-gathers go through the NCCL
		 * model (collective.h) */
		lsim_serving_coll_topo(sim, gpu, &in->pp_topo);
		struct lsim_coll_est e;
		bool timed = lsim_coll_time(&in->pp_topo, LSIM_COLL_SENDRECV, 2, 0.0, &e) == 0 &&
			     (tp == 1 ||
			      lsim_coll_time(&in->pp_topo, LSIM_COLL_ALLGATHER, tp, 0.0, &e) == 0);
		for (int32_t st = 0; timed && st + 1 < in->pp; st++) {
			double lat;
			timed = lsim_inst_pp_send_s(in, st, 0.0, &lat) >= 0.0;
		}
		if (!timed) {
			lsim_instance_release(in);
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "pp",
					     "pipeline stages of %d x %s: the GPU's fabric cannot "
					     "carry their send/recv (give the profile pcie_bw > 0 and "
					     "a tp its fabric allows)", (int)tp, gpu->name);
		}
	}
	return 0;
}

int lsim_instance_init_service(struct lsim_instance *in, struct lsim_serving *sim,
			       int32_t id, int64_t servers,
			       const struct lsim_service_cfg *svc,
			       const struct lsim_gpu_profile *gpu)
{
	init_common(in, sim, id, gpu);
	in->service_mode = true;
	lsim_instance_touch(in);
	in->service = *svc;
	in->cfg.max_num_seqs = servers;
	return 0;
}

void lsim_instance_release(struct lsim_instance *in)
{
	if (!in)
		return;
	lsim_perf_destroy(in->perf);
	lsim_perf_destroy(in->work_perf);
	for (int k = 0; k < LSIM_SHARE_MAX; k++)
		lsim_perf_destroy(in->share_perf[k]);
	lsim_perf_destroy(in->gpu_work_perf);
	lsim_kv_destroy(in->kv);
	lsim_kvhost_destroy(in->kvhost);
	in->kvhost = NULL;
	lsim_lora_destroy(in->lora);
	free(in->lora_skip);
	free(in->wait);
	free(in->run);
	free(in->sched);
	free(in->sched_n);
	free(in->pf_chunk);
	free(in->io_cls);
	free(in->pf_ctx);
	free(in->dec_ctx);
	free(in->hash_buf);
	free(in->pcie_util_ns);
	free(in->stage_node);
	free(in->stage_gpu0);
	for (int32_t k = 0; in->batches && k < in->pp; k++) {
		free(in->batches[k].reqs);
		free(in->batches[k].toks);
		free(in->batches[k].stage_ns);
	}
	free(in->batches);
	free(in->stage_holder);
	free(in->stage_next);
	memset(in, 0, sizeof *in);
}

double lsim_instance_pcie_util(struct lsim_instance *in)
{
	struct lsim_serving *s = in->sv;
	if (!s->net || in->gpu0 < 0)
		return 0;
	int32_t n = 2 * in->n_gpus;
	if (!in->pcie_util_ns) {
		in->pcie_util_ns = calloc((size_t)n, sizeof *in->pcie_util_ns);
		if (!in->pcie_util_ns)
			return 0;
	}
	lsim_time now = lsim_now(s->eng), dt = now - in->pcie_t;
	double u = 0; /* the busiest link's mean utilisation since pcie_t */
	for (int32_t j = 0; j < n; j++) {
		int32_t gpu = lsim_instance_gpu(in, j / 2);
		int32_t l = j % 2 ? s->topo.pcie_down[gpu] : s->topo.pcie_up[gpu];
		struct lsim_link_info li;
		if (l < 0 || lsim_link_get(s->net, l, &li) != 0)
			continue;
		if (dt > 0 && (li.util_ns - in->pcie_util_ns[j]) / (double)dt > u)
			u = (li.util_ns - in->pcie_util_ns[j]) / (double)dt;
		in->pcie_util_ns[j] = li.util_ns;
	}
	if (dt > 0) {
		double w = s->util_window > 0 ? (double)s->util_window : 1.0;
		in->pcie_ewma += (u - in->pcie_ewma) * -expm1(-(double)dt / w);
		in->pcie_t = now;
	}
	return in->pcie_ewma;
}

int32_t lsim_instance_gpu(const struct lsim_instance *in, int32_t k)
{
	if (!in->stage_gpu0)
		return in->gpu0 + k;
	return in->stage_gpu0[k / in->tp] + k % in->tp;
}

bool lsim_instance_on_node(const struct lsim_instance *in, int32_t node)
{
	if (!in->stage_node)
		return in->node == node;
	for (int32_t st = 0; st < in->pp; st++)
		if (in->stage_node[st] == node)
			return true;
	return false;
}

int32_t lsim_instance_kv_blocks(const struct lsim_instance *in)
{
	return in->kv_blocks;
}

void lsim_instance_drop_kv(struct lsim_instance *in)
{
	if (!in->kv)
		return;
	lsim_kv_destroy(in->kv);
	in->kv = NULL;
	lsim_instance_touch(in);
}

/* ---- requests and blocks ---- */

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * Content hash of KV block i (block_size tokens) of a request. Within the
 * part of the prompt a trace gives prefix-block ids for (Mooncake: one id
 * per 512 tokens, equal leading ids = equal prefix), the hash is derived
 * from the id of the trace block holding it and i, so requests sharing a
 * prefix share blocks. Elsewhere requests share no content: the hash is
 * unique per (request, block), and *shared (when given) is set false.
 */
static uint64_t block_hash_of(const struct lsim_req *r, int32_t i, int32_t bs,
			      bool *shared)
{
	int64_t end = ((int64_t)i + 1) * bs;
	if (r->n_hashes > 0 && end <= r->prompt) {
		int64_t j = ((int64_t)i * bs) / r->hash_block_tokens;
		if (j < r->n_hashes) {
			uint64_t h = splitmix(splitmix(r->hashes[j] ^ 0x5eed0ff5e7ULL) +
					      (uint64_t)i);
			*shared = true;
			return h ? h : 1;
		}
	}
	uint64_t h = splitmix((r->id + 1) * 0x100000001b3ULL + (uint64_t)i);
	*shared = false;
	return h ? h : 1;
}

static uint64_t block_hash(const struct lsim_req *r, int32_t i, int32_t bs)
{
	bool shared;
	return block_hash_of(r, i, bs, &shared);
}


static int32_t req_tokens(const struct lsim_req *r)
{
	return r->prompt + r->generated;
}

/* Tokens of work left: KV still to compute plus predicted output still to
 * generate. Instances keep the sum (queued_tokens) for routers. */
static int64_t work_of(const struct lsim_req *r)
{
	int64_t w = req_tokens(r) - r->computed;
	if (r->predicted > r->generated)
		w += r->predicted - r->generated;
	return w;
}

/* An allocation failed mid-step: the run stops and fails with
 * LSIM_ENOMEM rather than go on as if the KV cache were full. */
void lsim_inst_fail_nomem(struct lsim_serving *s)
{
	if (!s->error)
		s->error = LSIM_ENOMEM;
	lsim_stop(s->eng);
}

/*
 * A request's block table: its first n_listed entries are in r->blocks
 * (block ids, or LSIM_KV_ANON / LSIM_KV_ANON_PRIV); the rest up to
 * nblocks are anonymous blocks it only counts, of private content below
 * `hashed` and none above. Entries are listed where they must be read or
 * given ids: prefix hits, trace-shared content, a release the request
 * may come back from. A request that shares nothing lists none.
 */

/* Lists r's entries up to n (<= nblocks); false (the run failing) if out
 * of memory. */
static bool list_blocks(struct lsim_instance *in, struct lsim_req *r, int32_t n)
{
	if (n <= r->n_listed)
		return true;
	if (n > r->cap_blocks) {
		/* room for the whole request at once, not doubling up to it */
		int64_t whole = lsim_inst_ceil_div((int64_t)r->prompt + r->output, in->cfg.block_size);
		int32_t c = whole > n ? (int32_t)whole : n;
		int32_t *p = realloc(r->blocks, (size_t)c * sizeof *p);
		if (!p) {
			lsim_inst_fail_nomem(in->sv);
			return false;
		}
		r->blocks = p;
		r->cap_blocks = c;
	}
	for (int32_t i = r->n_listed; i < n; i++)
		r->blocks[i] = i < r->hashed ? LSIM_KV_ANON_PRIV : LSIM_KV_ANON;
	r->n_listed = n;
	return true;
}

/* Gives r enough blocks for `tokens` tokens; false if not enough free. */
bool lsim_inst_ensure_blocks(struct lsim_instance *in, struct lsim_req *r,
			  int32_t tokens)
{
	int32_t need = lsim_inst_ceil_div(tokens, in->cfg.block_size) - r->nblocks;
	if (need <= 0)
		return true;
	if (!lsim_kv_alloc_anon(in->kv, need))
		return false;
	r->nblocks += need; /* anonymous until their content is something
			     * others may find */
	return true;
}

/* r no longer holds blocks. */
static void clear_blocks(struct lsim_req *r)
{
	r->nblocks = r->n_listed = r->hashed = 0;
}

/* Releases the n listed blocks of r in kv, r may come back for their
 * content (a preemption, a hand-over): its blocks of private content get
 * their ids and hashes first, so that lsim_kv_release publishes them, and
 * r's lookups may find them from now on. */
static void release_to_return(struct lsim_kvcache *kv, struct lsim_req *r,
			      int32_t *blocks, int32_t n, int32_t bs)
{
	for (int32_t i = 0; i < n; i++)
		if (blocks[i] == LSIM_KV_ANON_PRIV) {
			blocks[i] = lsim_kv_name_private(kv, block_hash(r, i, bs));
			r->kv_published = true;
		}
	lsim_kv_release(kv, blocks, n);
}

/* Releases r's blocks; r may come back for their content (preemption). */
static void free_blocks(struct lsim_instance *in, struct lsim_req *r)
{
	if (list_blocks(in, r, r->nblocks))
		release_to_return(in->kv, r, r->blocks, r->nblocks,
				  (int32_t)in->cfg.block_size);
	clear_blocks(r);
}

static void kv_released(struct lsim_instance *src, struct lsim_req *r);

void lsim_instance_drop_handoff(struct lsim_instance *src, int32_t req)
{
	kv_released(src, &src->sv->reqs[req]);
}

/* A swap transfer (or a KV transfer from a prefill instance) of request
 * arg (its slot) ended. */
static void swap_moved(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	struct lsim_instance *in = ctx;
	struct lsim_serving *s = in->sv;
	if (in->failed)
		return; /* its requests were taken away at detection */
	struct lsim_req *r = &s->reqs[arg];
	if (--r->swap_flows > 0)
		return;
	lsim_inst_macro_cut(in); /* the next step may differ */
	if (!r->swapped) {
		/* swapped in: it runs again from where it stopped */
		if (r->kv_src) {
			/* a KV hand-over: the decode instance may be where
			 * the client sees its first token */
			if (r->kv_src->cfg.first_token == LSIM_FIRST_TOKEN_DECODE)
				r->first_token = lsim_now(s->eng);
			kv_released(r->kv_src, r);
		}
		in->swapping_in--;
		if (in->run_len < in->run_cap)
			in->run[in->run_len++] = (int32_t)arg;
		lsim_instance_touch(in);
		if (room_for_step(in) && !in->kick_pending)
			lsim_inst_schedule_step(in);
		return;
	}
	/* swapped out: it may be the request the queue waits for */
	if (room_for_step(in) && !in->kick_pending)
		lsim_inst_schedule_step(in);
}

/* Moves bytes of request ri's KV between its GPUs and the host as one
 * flow per GPU (out: GPU -> host); false if the links refuse. */
static bool swap_transfer(struct lsim_instance *in, int32_t ri, double bytes,
			  bool out, bool reload)
{
	struct lsim_serving *s = in->sv;
	struct lsim_req *r = &s->reqs[ri];
	for (int32_t k = 0; k < in->n_gpus; k++) {
		int32_t path[LSIM_PATH_MAX];
		int32_t gpu = lsim_instance_gpu(in, k);
		int n = out ? lsim_topo_path_gpu_to_host(&s->topo, gpu, path)
			: r->kv_src ? lsim_topo_path_gpu_to_gpu(
					      &s->topo,
					      lsim_instance_gpu(r->kv_src, k % r->kv_src->n_gpus),
					      gpu, path)
				    : lsim_topo_path_host_to_gpu(&s->topo, gpu, path);
		struct lsim_flow_req fr = {
			.path = path, .n_hops = n, .bytes = bytes / in->n_gpus,
			.done = swap_moved, .ctx = in, .arg = (uint64_t)ri,
			.kind = LSIM_FLOW_KV, .for_tenant = true, .tenant = r->tenant,
		};
		lsim_flow_id id;
		if (n < 0 || lsim_flow_start(s->net, &fr, &id, NULL) != 0) {
			if (!s->error)
				s->error = LSIM_ESTATE;
			return false;
		}
		r->swap_flows++;
	}
	if (reload)
		in->kv_reload_bytes += bytes;
	else if (r->kv_src)
		r->kv_src->kv_out_bytes += bytes;
	else
		in->swap_bytes += bytes;
	return true;
}

/* KV offload: content the GPU cache evicts goes to the host tier (the
 * copy leaves at the end of the batch being formed: offload_flush). */
static void kv_evicted(void *ctx, uint64_t hash)
{
	struct lsim_instance *in = ctx;
	if (lsim_kvhost_put(in->kvhost, hash))
		in->kv_offload_pending += in->kv_block_bytes;
}

/* Sends the evicted blocks' bytes to host memory: one flow per GPU on
 * its PCIe path, nobody waiting for it (the blocks were free). */
static void offload_flush(struct lsim_instance *in)
{
	struct lsim_serving *s = in->sv;
	if (in->kv_offload_pending <= 0 || in->gpu0 < 0 || !s->net)
		return;
	double bytes = in->kv_offload_pending;
	for (int32_t k = 0; k < in->n_gpus; k++) {
		int32_t path[LSIM_PATH_MAX];
		int n = lsim_topo_path_gpu_to_host(&s->topo, lsim_instance_gpu(in, k), path);
		struct lsim_flow_req fr = {
			.path = path, .n_hops = n, .bytes = bytes / in->n_gpus,
			.kind = LSIM_FLOW_KV,
		};
		lsim_flow_id id;
		if (n < 0 || lsim_flow_start(s->net, &fr, &id, NULL) != 0) {
			if (!s->error)
				s->error = LSIM_ESTATE;
			return;
		}
	}
	in->kv_offload_pending = 0;
	in->kv_offload_bytes += bytes;
}

static void preempt(struct lsim_instance *in, int32_t ri)
{
	struct lsim_req *r = &in->sv->reqs[ri];
	int64_t before = work_of(r);
	double bytes = (double)r->computed * lsim_model_kv_bytes_per_token(in->model);
	bool swap = in->cfg.preemption_mode == LSIM_PREEMPT_SWAP && in->gpu0 >= 0 &&
		    in->sv->net && r->computed > 0 &&
		    in->swap_used + bytes <= in->cfg.swap_space;
	free_blocks(in, r);
	if (swap && swap_transfer(in, ri, bytes, true, false)) {
		/* the KV lives on in host memory; its blocks are free now (the
		 * copy leaves before the next step reuses them) */
		r->swapped = true;
		r->swapped_bytes = bytes;
		in->swap_used += bytes;
		in->swaps++;
	} else {
		r->computed = 0;
	}
	in->queued_tokens += work_of(r) - before;
	r->preemptions++;
	in->preemptions++;
	if (wait_push_front(in, ri) != 0 && !in->sv->error)
		in->sv->error = LSIM_ENOMEM;
}

/* Registers the hashes of blocks that became full: content others may
 * find gets a block id and a map entry, private content (all of it
 * without trace prefix ids) only a count. */
void lsim_inst_register_full_blocks(struct lsim_instance *in, struct lsim_req *r)
{
	int32_t bs = (int32_t)in->cfg.block_size;
	int32_t full = r->computed / bs;
	if (full > r->nblocks)
		full = r->nblocks;
	if (full <= r->hashed)
		return;
	if (r->n_hashes == 0 && r->hashed >= r->n_listed) {
		/* private and not listed: a count */
		lsim_kv_mark_private(in->kv, full - r->hashed);
		r->hashed = full;
		return;
	}
	if (!list_blocks(in, r, full))
		return;
	/* the blocks past `hashed` are fresh: anonymous, listed LSIM_KV_ANON */
	int32_t n_priv = 0;
	for (; r->hashed < full; r->hashed++) {
		int32_t *b = &r->blocks[r->hashed];
		bool shared;
		uint64_t h = block_hash_of(r, r->hashed, bs, &shared);
		if (shared) {
			*b = lsim_kv_set_hash_anon(in->kv, h);
		} else { /* only r can ask for it, once it has let it go */
			*b = LSIM_KV_ANON_PRIV;
			n_priv++;
		}
	}
	lsim_kv_mark_private(in->kv, n_priv);
}

/* kv_reserve predicted: the blocks request r reserves, for its prompt
 * and its predicted output (none predicted: its prompt). */
static int32_t reserved_blocks(const struct lsim_instance *in, const struct lsim_req *r)
{
	int64_t tokens = (int64_t)r->prompt + (r->predicted > 0 ? r->predicted : 0);
	int64_t bs = in->cfg.block_size;
	int64_t b = (tokens + bs - 1) / bs;
	return b > INT32_MAX ? INT32_MAX : (int32_t)b;
}

/* Blocks the running requests reserved and do not hold yet. */
static int32_t unfilled_reservations(const struct lsim_instance *in)
{
	int64_t sum = 0;
	for (size_t i = 0; i < in->run_len; i++) {
		const struct lsim_req *q = &in->sv->reqs[in->run[i]];
		int32_t b = reserved_blocks(in, q);
		if (b > q->nblocks)
			sum += b - q->nblocks;
	}
	return sum > INT32_MAX ? INT32_MAX : (int32_t)sum;
}

/*
 * Tries to admit the request at the front of the queue with up to budget
 * new tokens. Returns tokens scheduled, or 0 if it does not fit.
 */
static int32_t admit(struct lsim_instance *in, struct lsim_req *r,
		     int32_t budget, int32_t *reload)
{
	int32_t bs = (int32_t)in->cfg.block_size;
	int32_t total = req_tokens(r);
	int32_t hit = 0, evictable = 0, host = 0;
	*reload = 0;
	/* Without trace prefix ids a request's content is its own: there is
	 * nothing to find unless it let some go before (a 64-bit hash
	 * collision aside, which would find another request's content). */
	if (in->cfg.enable_prefix_caching && (r->n_hashes > 0 || r->kv_published)) {
		/* At least the last token is computed, as in vLLM. */
		int32_t max_hit = (total - 1) / bs;
		if (lsim_grow((void **)&in->hash_buf, &in->hash_cap, (size_t)max_hit + 1,
			 sizeof *in->hash_buf) != 0) {
			lsim_inst_fail_nomem(in->sv);
			return 0;
		}
		/* the hashes in chunks, up to the first miss: a prompt's first
		 * block often misses, and hashing the rest would be for
		 * nothing */
		for (int32_t lo = 0; lo < max_hit;) {
			int32_t hi = lo + (lo < 8 ? 8 : lo); /* 8, 16, 32, ... */
			if (hi > max_hit)
				hi = max_hit;
			for (int32_t i = lo; i < hi; i++)
				in->hash_buf[i] = block_hash(r, i, bs);
			int32_t ev = 0;
			int32_t got = lsim_kv_match(in->kv, in->hash_buf + lo, hi - lo, &ev);
			hit += got;
			evictable += ev;
			if (got < hi - lo)
				break;
			lo = hi;
		}
		/* KV offload: the blocks after the GPU's hit that host memory
		 * holds come back from there instead of being computed */
		if (in->kvhost && hit < max_hit) {
			for (int32_t i = hit; i < max_hit; i++)
				in->hash_buf[i] = block_hash(r, i, bs);
			host = lsim_kvhost_match(in->kvhost, in->hash_buf + hit, max_hit - hit);
		}
	}
	int32_t computed = (hit + host) * bs;
	int32_t n_new = total - computed;
	int32_t hit_tokens = computed;
	if (n_new > budget) {
		if (!in->cfg.enable_chunked_prefill)
			return 0;
		n_new = budget;
	}
	int32_t need = lsim_inst_ceil_div(computed + n_new, bs) - hit;
	if (need + evictable > lsim_kv_free(in->kv))
		return 0;
	/* (a request alone on the instance is admitted whatever it
	 * reserves: it could otherwise never start) */
	if (in->cfg.kv_reserve == LSIM_KV_RESERVE_PREDICTED && in->run_len > 0 &&
	    (int64_t)reserved_blocks(in, r) - hit + evictable + unfilled_reservations(in) >
		    lsim_kv_free(in->kv))
		return 0;
	if (hit > 0) {
		r->nblocks = hit;
		if (!list_blocks(in, r, hit)) { /* out of memory: the run fails */
			clear_blocks(r); /* nothing was acquired */
			return 0;
		}
		lsim_kv_acquire(in->kv, in->hash_buf, hit, r->blocks);
		r->hashed = hit;
	}
	r->computed = computed;
	if (!lsim_inst_ensure_blocks(in, r, computed + n_new))
		return 0;
	in->prompt_tokens_admitted += total;
	in->prefix_hit_tokens += hit_tokens - host * bs;
	if (host > 0) {
		lsim_kvhost_touch(in->kvhost, in->hash_buf + hit, host);
		in->kv_host_hit_tokens += (int64_t)host * bs;
		*reload = host * bs;
	}
	return n_new;
}

/* ---- the engine step ---- */

/* Whether a request after position `from` of the running list is in no
 * batch in flight (pipelined: one that pick_victim may take). */
static bool victim_after(const struct lsim_instance *in, size_t from)
{
	for (size_t j = in->run_len - 1; j > from; j--)
		if (in->sv->reqs[in->run[j]].sched_tokens == 0)
			return true;
	return false;
}

/* Takes the request to preempt out of the running list: the last one,
 * or, pipelined, the last one after position `from` that is in no batch
 * in flight (the one at `from` is not). */
static int32_t pick_victim(struct lsim_instance *in, size_t from)
{
	size_t j = in->run_len - 1;
	while (in->pp > 1 && j > from && in->sv->reqs[in->run[j]].sched_tokens > 0)
		j--;
	int32_t victim = in->run[j];
	memmove(&in->run[j], &in->run[j + 1], (in->run_len - j - 1) * sizeof *in->run);
	in->run_len--;
	lsim_instance_touch(in);
	return victim;
}

/* Whether its kernels slow down with the recent PCIe load. */
bool lsim_inst_pcie_slowed(const struct lsim_instance *in)
{
	return in->gpu->pcie_interference > 0 && in->sv->net && in->gpu0 >= 0;
}

/* A step's work from the perf model's (s in seconds, < 0: unknown): s
 * in ns, at most the step's time dt (unknown: all of it); its FLOPs and
 * bytes as they are (unknown: 0). */
static struct lsim_iter_work work_ns(struct lsim_iter_work w, lsim_time dt)
{
	if (w.s < 0)
		return (struct lsim_iter_work){.s = (double)dt};
	w.s = w.s * 1e9 > (double)dt ? (double)dt : w.s * 1e9;
	return w;
}

/* Adds a step's work (s in ns) to the instance's counters. */
void lsim_inst_add_work(struct lsim_instance *in, const struct lsim_iter_work *w)
{
	in->work_ns += w->s;
	in->flops += w->flops;
	in->bytes += w->bytes;
}

/* Pipelined (pp > 1): stage st's compute for batch b in stages[st], as
 * vLLM splits the model (docs/parallelism.md): the decoder layers of
 * get_pp_indices (memplan.h), the embedding and the CPU overhead on the
 * first stage, the final norm, LM head and sampler on the last, each from
 * the perf model's stage_time; a backend without it gets the iteration's
 * dt split by layers. Each stage after the first also all-gathers the
 * activations it received (each rank got 1/tp of them): two all-gathers
 * (hidden states and residual, tokens x hidden x 2 B each) on the NCCL
 * model; with a cluster only their latency, as their data moves as flows
 * before the stage computes (instance_pipe.c). slow scales the compute
 * (PCIe interference). */
static void stage_times(const struct lsim_instance *in, const struct lsim_batch *b,
			int64_t tokens, lsim_time dt, double slow, lsim_time *stages)
{
	const struct lsim_perf *p = in->perf;
	int32_t pp = in->pp, n_layers = in->model->n_layers, below = 0;
	for (int32_t st = 0; st < pp; st++) {
		int32_t layers = lsim_memplan_stage_layers(n_layers, pp, st);
		lsim_time t;
		if (p->ops->stage_time) {
			t = p->ops->stage_time(p, b, layers, st == 0, st == pp - 1);
			if (slow != 1.0)
				t = (lsim_time)llround((double)t * slow);
		} else { /* dt (already slowed) in proportion to the layers */
			t = (lsim_time)((double)dt * (below + layers) / n_layers) -
			    (lsim_time)((double)dt * below / n_layers);
		}
		below += layers;
		if (st > 0 && in->tp > 1) {
			struct lsim_coll_est e;
			double bytes = (double)tokens * in->model->hidden * 2.0;
			if (lsim_coll_time(&in->pp_topo, LSIM_COLL_ALLGATHER, in->tp, bytes, &e) == 0)
				t += 2 * (lsim_time)ceil(
						 (lsim_inst_pp_flows(in) ? e.latency_s : e.time_s) * 1e9);
		}
		stages[st] = t < 1 ? 1 : t;
	}
}

/* GPU sharing: the members of in's GPU with work as its step starts
 * (in itself, and each one stepping or holding requests). */
static int32_t share_busy(const struct lsim_instance *in)
{
	int32_t k = 0;
	for (int32_t j = 0; j < in->share->n; j++) {
		const struct lsim_instance *m = in->share->member[j];
		k += m == in || m->busy || m->run_len > 0 || m->wait_len > 0;
	}
	return k;
}

/* The time of a step of batch b (at least 1 ns), and its work in ns of
 * its GPUs at peak rates (at most that time), with its FLOPs and bytes;
 * pipelined, each stage's time in stages (stage_times). */
lsim_time lsim_inst_step_time(struct lsim_instance *in, const struct lsim_batch *b,
			   int64_t tokens, struct lsim_iter_work *work, lsim_time *stages)
{
	struct lsim_iter_work w;
	lsim_time dt;
	double slow = 1.0;
	int32_t k = in->share && in->share->mode != LSIM_SHARE_MIG ? share_busy(in) : 1;
	if (in->work_perf) { /* measured times, work from the roofline */
		dt = lsim_perf_iter_time(in->perf, b);
		w = lsim_perf_iter_work(in->work_perf, b);
	} else if (k > 1 && in->share->mode == LSIM_SHARE_MPS) {
		dt = lsim_perf_iter_eval(in->share_perf[k - 1], b, &w);
	} else {
		dt = lsim_perf_iter_eval(in->perf, b, &w);
	}
	if (b->lora_tokens > 0) {
		/* LoRA's shrink and expand kernels (Punica's SGMV, S-LoRA's
		 * MBGMM): 2 FLOPs per adapter parameter per token, the batch's
		 * adapters read once, each at the GPU's achievable rates */
		double flops = 2.0 * (double)b->lora_tokens * in->cfg.lora_adapter_params;
		double bytes = (double)b->n_lora * in->cfg.lora_adapter_bytes;
		double sec = fmax(flops / (in->gpu->bf16_flops * in->gpu->mfu_max),
				  bytes / (in->gpu->hbm_bw * in->gpu->mbu));
		dt += (lsim_time)ceil(sec * 1e9);
		if (w.s >= 0)
			w.s += fmax(flops / in->gpu->bf16_flops, bytes / in->gpu->hbm_bw);
		w.flops += flops;
		w.bytes += bytes;
	}
	if (k > 1 && in->share->mode == LSIM_SHARE_TIME_SLICE) {
		/* 1/k of the GPU, each slice of q costing q + switch */
		const struct lsim_share *sh = in->share;
		dt = (lsim_time)llround((double)dt * (double)k * (sh->slice_s + sh->switch_s) /
					sh->slice_s);
	}
	if (lsim_inst_pcie_slowed(in)) {
		double u = lsim_instance_pcie_util(in);
		slow = lsim_pcie_slowdown(in->gpu->pcie_interference,
					  in->gpu->pcie_interference_exp, u);
		dt = (lsim_time)llround((double)dt * slow);
	}
	if (dt < 1)
		dt = 1;
	if (in->gpu_work_perf) /* shared: its work at the whole GPU's peaks */
		w = lsim_perf_iter_work(in->gpu_work_perf, b);
	*work = work_ns(w, dt);
	if (stages)
		stage_times(in, b, tokens, dt, slow, stages);
	return dt;
}


/* LoRA: whether adapter a is among the step's (lora->batch), and noting
 * it there (a >= 0; at most max_loras: the scheduler's bound). */
static bool lora_noted(const struct lsim_lora *l, int32_t a)
{
	for (int32_t i = 0; i < l->n_batch; i++)
		if (l->batch[i] == a)
			return true;
	return false;
}

static void lora_note(struct lsim_lora *l, int32_t a)
{
	if (a >= 0 && !lora_noted(l, a) && l->n_batch < l->n_slots)
		l->batch[l->n_batch++] = a;
}

/* Forms the batch of the instance's next step in in->sched (n_sched
 * requests, none when it has nothing to run), vLLM's scheduler. */
static void form_batch(struct lsim_instance *in)
{
	struct lsim_serving *s = in->sv;
	lsim_time now = lsim_now(s->eng);
	int32_t budget = (int32_t)in->cfg.max_num_batched_tokens;
	bool preempted = false;
	in->n_sched = 0;

	/* Running requests first, in admission order. Pipelined, as vLLM's
	 * V1 scheduler: the tokens in batches in flight (sched_tokens) count
	 * as scheduled, so a request whose tokens are all in flight waits for
	 * its batch, while a prefill with chunks left gets its next chunk in
	 * this batch (docs/parallelism.md). */
	for (size_t i = 0; i < in->run_len && budget > 0; i++) {
		int32_t ri = in->run[i];
		struct lsim_req *r = &s->reqs[ri];
		int32_t ahead = in->pp > 1 ? r->sched_tokens : 0;
		int32_t n_new = req_tokens(r) - r->computed - ahead;
		if (n_new <= 0)
			continue; /* all its tokens in batches in flight */
		if (n_new > budget)
			n_new = budget;
		bool self_preempted = false, held = false;
		while (!lsim_inst_ensure_blocks(in, r, r->computed + ahead + n_new)) {
			if (ahead > 0 && !victim_after(in, i)) {
				held = true; /* in flight: not preempted; it waits */
				break;
			}
			int32_t victim = pick_victim(in, i);
			preempt(in, victim);
			preempted = true;
			if (victim == ri) {
				self_preempted = true;
				break;
			}
		}
		if (self_preempted)
			break;
		if (held)
			continue;
		r->sched_tokens = ahead + n_new;
		in->sched_n[in->n_sched] = n_new;
		in->sched[in->n_sched++] = ri;
		budget -= n_new;
	}

	/* LoRA: the adapters of the running requests scheduled */
	struct lsim_lora *lora = in->lora;
	size_t n_skipped = 0;
	if (lora) {
		lora->n_batch = 0;
		for (size_t i = 0; i < in->n_sched; i++)
			lora_note(lora, s->reqs[in->sched[i]].lora);
	}

	/* Then waiting requests, unless this step preempted. */
	while (!preempted && budget > 0 && in->wait_len > 0 &&
	       in->run_len + (size_t)in->swapping_in < (size_t)in->cfg.max_num_seqs) {
		int32_t ri = wait_front(in);
		struct lsim_req *r = &s->reqs[ri];
		if (lora && r->lora >= 0 && lora->n_batch == lora->n_slots &&
		    !lora_noted(lora, r->lora)) {
			/* vLLM V1: a request whose adapter would make the step's
			 * adapters more than max_loras is skipped for this step;
			 * those behind it may go first */
			if (lsim_grow((void **)&in->lora_skip, &in->lora_skip_cap,
				      n_skipped + 1, sizeof *in->lora_skip) != 0) {
				lsim_inst_fail_nomem(s);
				break;
			}
			in->lora_skip[n_skipped++] = in->wait[0];
			wait_pop_front(in);
			continue;
		}
		if (r->swapped && r->kv_src && r->kv_src->failed && r->swap_flows == 0) {
			/* its KV died with the prefill instance */
			wait_pop_front(in);
			in->outstanding--;
			lsim_instance_touch(in);
			in->queued_tokens -= work_of(r);
			s->hooks->requeue(s->owner, r->kv_src, ri);
			continue;
		}
		if (r->swapped) {
			/* back in: blocks for its KV, then the copy to the GPU;
			 * it runs once the copy is done (swap_moved) */
			if (r->swap_flows > 0 ||
			    !lsim_inst_ensure_blocks(in, r, r->computed)) {
				if (r->swap_flows == 0)
					free_blocks(in, r);
				break;
			}
			wait_pop_front(in);
			r->swapped = false;
			if (!r->kv_src)
				in->swap_used -= r->swapped_bytes;
			in->swapping_in++;
			if (!swap_transfer(in, ri, r->swapped_bytes, false, false))
				break;
			continue;
		}
		int32_t reload;
		int32_t n_new = admit(in, r, budget, &reload);
		if (n_new == 0) {
			free_blocks(in, r);
			r->computed = 0;
			break;
		}
		wait_pop_front(in);
		if (r->first_sched < 0)
			r->first_sched = now;
		if (reload > 0) {
			/* KV offload: its prefix comes back from host memory
			 * first; it runs once the copy is in (swap_moved) */
			in->swapping_in++;
			if (!swap_transfer(in, ri, (double)reload * lsim_model_kv_bytes_per_token(in->model),
					   false, true))
				break;
			continue;
		}
		in->run[in->run_len++] = ri;
		lsim_instance_touch(in);
		r->sched_tokens = n_new;
		in->sched_n[in->n_sched] = n_new;
		in->sched[in->n_sched++] = ri;
		budget -= n_new;
		if (lora)
			lora_note(lora, r->lora);
	}
	for (size_t i = 0; i < n_skipped; i++) /* back in their places */
		wait_place(in, in->lora_skip[i]);
	if (in->kvhost)
		offload_flush(in);
}

/* Describes the batch formed (in->sched) to the perf model in *b (its
 * arrays are the instance's); returns its tokens, and its prefill
 * requests in *n_prefill. */
static int64_t describe_batch(struct lsim_instance *in, struct lsim_batch *b, int *n_prefill)
{
	struct lsim_serving *s = in->sv;
	int np = 0, nd = 0;
	int64_t tokens = 0;
	for (size_t i = 0; i < in->n_sched; i++) {
		const struct lsim_req *r = &s->reqs[in->sched[i]];
		/* this batch's tokens of it, after those of earlier batches
		 * still in flight (pipelined) */
		int32_t n = in->pp > 1 ? in->sched_n[i] : r->sched_tokens;
		int32_t ctx = r->computed + (r->sched_tokens - n);
		tokens += n;
		bool decode = n == 1 && r->generated > 0 && ctx == req_tokens(r) - 1;
		if (decode) {
			in->dec_ctx[nd++] = ctx;
		} else {
			in->pf_chunk[np] = n;
			in->pf_ctx[np++] = ctx;
		}
	}
	*b = (struct lsim_batch){
		.n_prefill = np, .prefill_chunk = in->pf_chunk,
		.prefill_ctx = in->pf_ctx, .n_decode = nd,
		.decode_ctx = in->dec_ctx,
	};
	if (in->lora) {
		for (size_t i = 0; i < in->n_sched; i++)
			if (s->reqs[in->sched[i]].lora >= 0)
				b->lora_tokens += in->pp > 1 ? in->sched_n[i]
							     : s->reqs[in->sched[i]].sched_tokens;
		b->n_lora = in->lora->n_batch;
	}
	*n_prefill = np;
	return tokens;
}

void lsim_inst_schedule_step(struct lsim_instance *in)
{
	struct lsim_serving *s = in->sv;
	lsim_time now = lsim_now(s->eng);
	if (in->dp && in->dp->lockstep) {
		lsim_dp_step(in->dp);
		return;
	}
	form_batch(in);
	if (in->n_sched == 0) {
		if (in->n_inflight == 0) {
			in->busy = false;
			if (in->state == LSIM_INST_DRAINING)
				s->hooks->idle(s->owner, in);
		}
		return;
	}

	struct lsim_batch b;
	int np = 0;
	int64_t tokens = describe_batch(in, &b, &np);
	struct lsim_iter_work work;
	/* pipelined: the stage times go to the batch's slot (lsim_inst_pipe_issue) */
	lsim_time *stages = in->pp > 1
		? in->batches[(in->b_head + in->n_inflight) % in->pp].stage_ns : NULL;
	lsim_time dt = lsim_inst_step_time(in, &b, tokens, &work, stages);
	if (in->n_inflight == 0) {
		in->busy = true;
		in->step_start = now;
	}
	in->iterations++;
	in->tokens += tokens;
	if (in->pp > 1) {
		lsim_inst_pipe_issue(in, tokens, work);
		if (room_for_step(in))
			lsim_inst_schedule_step(in); /* another batch, of other requests */
		return;
	}
	in->step_work = work;
	bool ring = lsim_inst_ring_on(in);
	if (in->lora) {
		/* its adapters first: the step waits for their copies (lora.c);
		 * no macro run (the LoRA term is added to each step's time) */
		int32_t copies = lsim_inst_lora_load(in);
		if (copies > 0) {
			in->lora->wait_dt = dt;
			in->lora->wait_tokens = tokens;
			in->lora->wait_ring = ring;
		}
		if (copies != 0)
			return;
		lsim_inst_launch_step(in, dt, tokens, ring);
		return;
	}
	if (lsim_inst_io_on(in)) {
		lsim_inst_io_step(in, dt, tokens);
		return;
	}
	/* shared: the next step's time depends on the neighbours then */
	lsim_time span = ring || np > 0 || !s->macro_steps || (in->share && in->share->mode != LSIM_SHARE_MIG) ? dt : lsim_inst_plan_run(in, &b, dt, now);
	in->step_ev = lsim_schedule_in_tag(s->eng, span, ring ? lsim_inst_compute_done : lsim_inst_step_end, in,
					   (uint64_t)tokens, ring ? 0 : LSIM_TAG_LIGHT);
	if (!in->step_ev && !s->error)
		s->error = LSIM_ENOMEM;
}

void lsim_inst_launch_step(struct lsim_instance *in, lsim_time dt, int64_t tokens, bool ring)
{
	struct lsim_serving *s = in->sv;
	if (lsim_inst_io_on(in)) {
		lsim_inst_io_step(in, dt, tokens);
		return;
	}
	in->step_ev = lsim_schedule_in_tag(s->eng, dt, ring ? lsim_inst_compute_done : lsim_inst_step_end, in,
					   (uint64_t)tokens, ring ? 0 : LSIM_TAG_LIGHT);
	if (!in->step_ev && !s->error)
		s->error = LSIM_ENOMEM;
}

static bool room_for_step(const struct lsim_instance *in)
{
	return in->pp > 1 ? in->n_inflight < in->pp : !in->busy;
}

static void finish_request(struct lsim_instance *in, int32_t ri,
			   lsim_time now)
{
	struct lsim_req *r = &in->sv->reqs[ri];
	r->finish = now;
	r->status = LSIM_REQ_FINISHED;
	in->queued_tokens -= work_of(r);
	/* done: nobody can ask for its own content again. The entries not
	 * listed are the table's tail: released first */
	int32_t lo = r->n_listed;
	int32_t n_priv = r->hashed > lo ? r->hashed - lo : 0;
	lsim_kv_release_anon(in->kv, r->nblocks - lo - n_priv, n_priv);
	lsim_kv_release_final(in->kv, r->blocks, lo);
	clear_blocks(r);
	free(r->blocks);
	r->blocks = NULL;
	r->cap_blocks = 0;
	free(r->hashes);
	r->hashes = NULL;
	r->n_hashes = 0;
	in->outstanding--;
	lsim_instance_touch(in);
	in->sv->hooks->request_done(in->sv->owner, ri);
}

/* Leaves this prefill instance after its first token: the KV stays in
 * its blocks until the decode instance has copied it. */
static void hand_over(struct lsim_instance *in, int32_t ri)
{
	struct lsim_serving *s = in->sv;
	struct lsim_req *r = &s->reqs[ri];
	in->queued_tokens -= work_of(r);
	in->outstanding--;
	lsim_instance_touch(in);
	in->handing_over++;
	/* the blocks stay taken here until the copy is done (listed: their
	 * release names the private ones) */
	if (!list_blocks(in, r, r->nblocks))
		return;
	r->src_blocks = r->blocks;
	r->src_nblocks = r->nblocks;
	r->blocks = NULL;
	r->cap_blocks = 0;
	clear_blocks(r);
	r->kv_src = in;
	r->prefill_instance = in->id;
	r->swapped = true;
	r->swapped_bytes = (double)r->computed * lsim_model_kv_bytes_per_token(in->model);
	s->hooks->handoff(s->owner, in, ri);
}

/* The decode instance has the KV: the blocks here are free again (if
 * this instance still has its cache: a failed or reclaimed one dropped
 * it when it was evicted). */
static void kv_released(struct lsim_instance *src, struct lsim_req *r)
{
	if (src->kv)
		release_to_return(src->kv, r, r->src_blocks, r->src_nblocks,
				  (int32_t)src->cfg.block_size);
	free(r->src_blocks);
	r->src_blocks = NULL;
	r->src_nblocks = 0;
	r->kv_src = NULL;
	src->handing_over--;
	if (room_for_step(src) && !src->kick_pending)
		lsim_inst_schedule_step(src);
}

/*
 * The batch of requests list[0 .. n), which started at `start` on `gpus`
 * GPUs, is done: each request takes its share of the GPU time, its tokens
 * count, finished requests leave and prefilled ones go to a decode
 * instance. The output tokens stream back to the client, with those of a
 * macro step's earlier steps.
 */
void lsim_inst_finish_batch(struct lsim_instance *in, const int32_t *list,
			 const int32_t *toks, size_t n, lsim_time start, int32_t gpus)
{
	struct lsim_serving *s = in->sv;
	lsim_time now = lsim_now(s->eng);
	int32_t tokens_out = 0;
	/* each request's share of the step: its tokens of the step's tokens
	 * (toks[i] pipelined, its sched_tokens else) */
	int64_t step_tokens = 0;
	for (size_t i = 0; i < n; i++)
		step_tokens += toks ? toks[i] : s->reqs[list[i]].sched_tokens;
	double kv_block_bytes = in->kv_block_bytes;
	for (size_t i = 0; i < n; i++) {
		struct lsim_req *r = &s->reqs[list[i]];
		int32_t mine = toks ? toks[i] : r->sched_tokens;
		double share = step_tokens > 0 ? (double)mine / (double)step_tokens : 0;
		r->gpu_ns += share * (double)(now - start) * gpus;
		if (share > r->max_share)
			r->max_share = share;
		if (r->nblocks * kv_block_bytes > r->max_kv_bytes)
			r->max_kv_bytes = r->nblocks * kv_block_bytes;
		int64_t before = work_of(r);
		r->computed += mine;
		r->sched_tokens -= mine; /* pipelined: its later chunks in flight stay */
		if (in->cfg.enable_prefix_caching)
			lsim_inst_register_full_blocks(in, r);
		if (r->computed < req_tokens(r)) {
			/* a prefill chunk that is not the last */
			in->queued_tokens += work_of(r) - before;
			continue;
		}
		r->generated++;
		tokens_out++;
		in->queued_tokens += work_of(r) - before;
		/* (first_token < 0 only before a first token: generated is
		 * 1 now; testing that first spares a cache line) */
		if (r->generated == 1 && r->first_token < 0)
			r->first_token = now;
		if (r->generated >= r->output)
			r->status = -1; /* mark for removal below */
		else if (in->role == LSIM_ROLE_PREFILL)
			r->status = -2; /* prefill done: to a decode instance */
	}
	s->hooks->stream_tokens(s->owner, in, in->m_tokens + tokens_out);
	in->m_tokens = 0;
	/* Drop finished requests from the running list, keeping order. */
	size_t k = 0;
	for (size_t i = 0; i < in->run_len; i++) {
		int32_t ri = in->run[i];
		if (s->reqs[ri].status == -1) {
			finish_request(in, ri, now);
		} else if (s->reqs[ri].status == -2) {
			s->reqs[ri].status = LSIM_REQ_UNFINISHED;
			hand_over(in, ri);
		} else
			in->run[k++] = ri;
	}
	if (k != in->run_len) {
		in->run_len = k;
		lsim_instance_touch(in);
	}
}


void lsim_inst_step_end(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct lsim_instance *in = subject;
	if (in->failed)
		return; /* crashed mid-step: nothing comes out */
	if (in->m_slot >= 0) /* a run's earlier steps, if it ends here */
		lsim_inst_catch_up(in, lsim_now(eng), false);
	if (in->m_more && lsim_inst_extend_run(in))
		return;
	in->busy_ns += lsim_now(eng) - in->step_start;
	lsim_inst_add_work(in, &in->step_work);
	lsim_inst_finish_batch(in, in->sched, NULL, in->n_sched, in->step_start, in->n_gpus);
	in->n_sched = 0;
	lsim_inst_schedule_step(in);
}

/* ---- lockstep data-parallel steps ----
 * The ranks of an MoE data-parallel group (struct lsim_dp) step together,
 * as vLLM's DPEngineCoreProc does (vllm/v1/engine/core.py: run_busy_loop,
 * execute_dummy_batch): while any rank has requests to run, every rank
 * runs a forward pass each step, one with none a dummy batch of one
 * token, and the expert layers' collectives hold each step to the slowest
 * rank. Each rank's batch forms from its own queues as vLLM's scheduler
 * forms it; with expert parallelism its perf model charges it its share
 * of every rank's tokens (moe_tokens) and the dispatch and combine of the
 * largest rank's (a2a_tokens). The step is one event for the group, at
 * the slowest rank's end; with a cluster (the perf model's a2a_pair_bytes)
 * their data then moves as flows from every rank's GPU to every
 * other's, and the step ends when the last arrives. No macro steps,
 * pipeline stages or all-reduce flows (the scenario refuses those with
 * data parallelism). */

/* A dummy batch: one token of one sequence. */
static const int32_t dummy_ctx[1] = {1};

static void dp_step_end(struct lsim_engine *eng, void *subject, uint64_t arg);

static void dp_a2a_moved(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	(void)arg;
	struct lsim_dp *g = ctx;
	if (--g->a2a_flows == 0)
		dp_step_end(g->rank[0]->sv->eng, g, 0);
}

/* The ranks' compute is done: the step's dispatch and combine data goes from each
 * taking part rank's GPU to each other's, as flows; the step ends when
 * the last arrives (at once with fewer than two ranks). */
static void dp_computed(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct lsim_dp *g = subject;
	struct lsim_serving *s = g->rank[0]->sv;
	g->a2a_flows = 1; /* held while the flows start */
	for (int32_t i = 0; i < g->n; i++)
		for (int32_t j = 0; j < g->n; j++) {
			if (i == j || !g->part[i] || !g->part[j])
				continue;
			if (!lsim_inst_gpu_flow(s, lsim_instance_gpu(g->rank[i], 0),
						lsim_instance_gpu(g->rank[j], 0), g->a2a_bytes,
						g->a2a_cap, dp_a2a_moved, g, 0))
				return;
			g->a2a_flows++;
		}
	if (--g->a2a_flows == 0)
		dp_step_end(eng, g, 0);
}

void lsim_dp_step(struct lsim_dp *g)
{
	if (g->in_flight)
		return;
	struct lsim_serving *s = g->rank[0]->sv;
	lsim_time now = lsim_now(s->eng);
	int64_t t_all = 0, t_max = 0;
	bool any = false;
	for (int32_t i = 0; i < g->n; i++) {
		struct lsim_instance *in = g->rank[i];
		g->part[i] = !in->failed && in->kv && in->state != LSIM_INST_STOPPED;
		if (!g->part[i])
			continue;
		form_batch(in);
		int np = 0;
		int64_t t = describe_batch(in, &g->batch[i], &np);
		if (in->n_sched == 0) {
			g->batch[i] = (struct lsim_batch){.n_decode = 1, .decode_ctx = dummy_ctx};
			t = 1;
		} else
			any = true;
		t_all += t;
		if (t > t_max)
			t_max = t;
	}
	if (!any) { /* nothing anywhere: the group idles */
		for (int32_t i = 0; i < g->n; i++) {
			struct lsim_instance *in = g->rank[i];
			in->busy = false;
			if (g->part[i] && in->state == LSIM_INST_DRAINING)
				s->hooks->idle(s->owner, in);
		}
		return;
	}
	lsim_time dt = 0;
	for (int32_t i = 0; i < g->n; i++) {
		if (!g->part[i])
			continue;
		struct lsim_instance *in = g->rank[i];
		g->batch[i].moe_tokens = t_all;
		g->batch[i].a2a_tokens = t_max;
		lsim_time t = lsim_inst_step_time(in, &g->batch[i], 0, &in->step_work, NULL);
		if (t > dt)
			dt = t;
		in->busy = true;
		in->step_start = now;
		if (in->n_sched > 0) {
			in->iterations++;
			int64_t tokens = 0;
			for (size_t k = 0; k < in->n_sched; k++)
				tokens += s->reqs[in->sched[k]].sched_tokens;
			in->tokens += tokens;
		} else
			g->dummy_steps++;
	}
	g->steps++;
	g->in_flight = true;
	g->a2a_bytes = 0.0;
	for (int32_t i = 0; i < g->n && s->net; i++)
		if (g->part[i] && g->rank[i]->gpu0 >= 0) {
			g->a2a_bytes = lsim_perf_a2a_pair_bytes(g->rank[i]->perf, t_max, &g->a2a_cap);
			break;
		}
	if (!lsim_schedule_in(s->eng, dt, g->a2a_bytes > 0.0 ? dp_computed : dp_step_end, g, 0) &&
	    !s->error)
		s->error = LSIM_ENOMEM;
}

static void dp_step_end(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct lsim_dp *g = subject;
	lsim_time now = lsim_now(eng);
	for (int32_t i = 0; i < g->n; i++) {
		struct lsim_instance *in = g->rank[i];
		if (!g->part[i] || in->failed)
			continue; /* crashed mid-step: nothing comes out */
		in->busy_ns += now - in->step_start;
		lsim_inst_add_work(in, &in->step_work);
		if (in->n_sched > 0)
			lsim_inst_finish_batch(in, in->sched, NULL, in->n_sched, in->step_start, in->n_gpus);
		in->n_sched = 0;
	}
	g->in_flight = false;
	lsim_dp_step(g);
}

/* ---- service mode ---- */

static void service_start(struct lsim_instance *in, int32_t ri)
{
	struct lsim_serving *s = in->sv;
	struct lsim_req *r = &s->reqs[ri];
	lsim_time now = lsim_now(s->eng);
	r->first_sched = now;
	double mean = (double)in->service.mean;
	double t = in->service.dist == LSIM_SVC_EXPONENTIAL
			   ? gsl_ran_exponential(s->service_rng, mean)
			   : mean;
	lsim_time dt = (lsim_time)llround(t);
	if (dt < 1)
		dt = 1;
	in->busy_servers++;
	lsim_instance_touch(in);
	in->busy_ns += dt; /* server-time; divided by servers in reports */
	in->iterations++;
	in->tokens += r->prompt + r->output;
	if (!lsim_schedule_in(s->eng, dt, service_end, in, (uint64_t)ri) &&
	    !s->error)
		s->error = LSIM_ENOMEM;
}

static void service_end(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct lsim_instance *in = subject;
	int32_t ri = (int32_t)arg;
	if (in->failed)
		return;
	struct lsim_req *r = &in->sv->reqs[ri];
	lsim_time now = lsim_now(eng);
	in->queued_tokens -= work_of(r);
	r->generated = r->output;
	r->first_token = now;
	r->finish = now;
	r->status = LSIM_REQ_FINISHED;
	in->busy_servers--;
	in->outstanding--;
	lsim_instance_touch(in);
	in->sv->hooks->request_done(in->sv->owner, ri);
	if (in->wait_len > 0) {
		int32_t next = wait_front(in);
		wait_pop_front(in);
		service_start(in, next);
	}
}

/* ---- submission ---- */

/* A request on its way does not change between the two calls (nothing
 * computes it), so the work added is the work taken back. */
void lsim_instance_reserve(struct lsim_instance *in, int32_t ri)
{
	in->in_transit++;
	in->transit_tokens += work_of(&in->sv->reqs[ri]);
	lsim_instance_touch(in);
}

void lsim_instance_unreserve(struct lsim_instance *in, int32_t ri)
{
	in->in_transit--;
	in->transit_tokens -= work_of(&in->sv->reqs[ri]);
	lsim_instance_touch(in);
}

void lsim_instance_submit(struct lsim_instance *in, int32_t ri)
{
	struct lsim_serving *s = in->sv;
	struct lsim_req *r = &s->reqs[ri];
	r->instance = in->id;
	in->outstanding++;
	lsim_instance_touch(in);
	in->queued_tokens += work_of(r);
	if (in->service_mode) {
		if (in->busy_servers < in->cfg.max_num_seqs)
			service_start(in, ri);
		else if (wait_push_back(in, ri) != 0 && !s->error)
			s->error = LSIM_ENOMEM;
		return;
	}
	/* A request that can never fit would be preempted forever. */
	int64_t total = (int64_t)r->prompt + r->output;
	if (total > in->max_model_len ||
	    lsim_inst_ceil_div(total, in->cfg.block_size) > lsim_kv_total(in->kv)) {
		r->status = LSIM_REQ_REJECTED;
		r->reject_reason = LSIM_REJECT_NEVER_FITS;
		r->finish = lsim_now(s->eng);
		in->outstanding--;
		lsim_instance_touch(in);
		in->queued_tokens -= work_of(r);
		s->hooks->request_done(s->owner, ri);
		return;
	}
	if (wait_push_back(in, ri) != 0) {
		if (!s->error)
			s->error = LSIM_ENOMEM;
		return;
	}
	/* Start a step from an event at the same time, so that every request
	 * arriving at this instant is in the queue when the batch forms. */
	if (room_for_step(in) && !in->kick_pending) {
		in->kick_pending = true;
		if (!lsim_schedule_in(s->eng, 0, kick, in, 0) && !s->error)
			s->error = LSIM_ENOMEM;
	}
}

static void kick(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_instance *in = subject;
	in->kick_pending = false;
	if (in->failed)
		return;
	if (room_for_step(in))
		lsim_inst_schedule_step(in);
}
