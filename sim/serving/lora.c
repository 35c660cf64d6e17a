/*
 * lora.c - LoRA adapters (docs/lora.md): an adapter's size from the
 * model's shapes, the GPU slots and host cache of an instance, and the
 * copies a step waits for.
 *
 * As vLLM V1 serves them (LRUCacheWorkerLoRAManager): before a step runs,
 * each adapter of its batch that is not in a GPU slot is put in one (a
 * free slot, else the least recently used one whose adapter is not in
 * the batch), first read from storage into host memory if the host cache
 * (max_cpu_loras, LRU) lacks it. vLLM does this synchronously in the
 * model runner before the forward pass, so the step's kernels start when
 * every copy has arrived: the copies and the step's time add, for every
 * request of the step. A copy is one flow per GPU of the instance, of that
 * GPU's shard: host -> GPU on its PCIe path, or, for a host-cache miss,
 * storage -> GPU (the cluster's storage service, its network hops, the
 * host and PCIe), both of kind lora.
 */
#include <stdlib.h>

#include "serving/instance_internal.h"
#include "serving/lora.h"

double lsim_lora_params(const struct lsim_model_arch *m, int32_t rank, int32_t tp)
{
	if (m->n_experts > 0 || tp < 1)
		return 0;
	double d = m->hidden, q = (double)m->n_heads * m->head_dim,
	       kv = (double)m->n_kv_heads * m->head_dim, I = m->intermediate, t = tp;
	/* column-parallel (A whole, B sharded): q, k, v, [gate,] up */
	double col = (d + q / t) + 2 * (d + kv / t) + (m->gated_mlp ? 2 : 1) * (d + I / t);
	/* row-parallel (A sharded, B whole): o, down */
	double row = (q / t + d) + (I / t + d);
	return (double)rank * (col + row) * m->n_layers;
}

double lsim_lora_bytes(const struct lsim_model_arch *m, int32_t rank, int32_t tp)
{
	return lsim_lora_params(m, rank, tp) * m->bytes_per_param;
}

bool lsim_lora_rank_ok(int64_t rank)
{
	static const int64_t ok[] = {1, 8, 16, 32, 64, 128, 256, 320, 512};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
		if (rank == ok[i])
			return true;
	return false;
}

struct lsim_lora *lsim_lora_create(int32_t n_slots, int32_t n_host)
{
	if (n_slots < 1 || n_host < n_slots)
		return NULL;
	struct lsim_lora *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->n_slots = n_slots;
	l->n_host = n_host;
	l->slot = malloc((size_t)n_slots * sizeof *l->slot);
	l->slot_used = calloc((size_t)n_slots, sizeof *l->slot_used);
	l->batch = malloc((size_t)n_slots * sizeof *l->batch);
	l->host = malloc((size_t)n_host * sizeof *l->host);
	l->host_used = calloc((size_t)n_host, sizeof *l->host_used);
	if (!l->slot || !l->slot_used || !l->batch || !l->host || !l->host_used) {
		lsim_lora_destroy(l);
		return NULL;
	}
	for (int32_t i = 0; i < n_slots; i++)
		l->slot[i] = -1;
	for (int32_t i = 0; i < n_host; i++)
		l->host[i] = -1;
	return l;
}

void lsim_lora_destroy(struct lsim_lora *l)
{
	if (!l)
		return;
	free(l->slot);
	free(l->slot_used);
	free(l->batch);
	free(l->host);
	free(l->host_used);
	free(l);
}

int32_t lsim_lora_slot_of(const struct lsim_lora *l, int32_t a)
{
	for (int32_t i = 0; i < l->n_slots; i++)
		if (l->slot[i] == a)
			return i;
	return -1;
}

static bool in_batch(const struct lsim_lora *l, int32_t a)
{
	for (int32_t i = 0; i < l->n_batch; i++)
		if (l->batch[i] == a)
			return true;
	return false;
}

int32_t lsim_lora_slot_take(struct lsim_lora *l, int32_t a)
{
	int32_t best = -1;
	for (int32_t i = 0; i < l->n_slots; i++) {
		if (l->slot[i] < 0) {
			best = i;
			break;
		}
		if (!in_batch(l, l->slot[i]) &&
		    (best < 0 || l->slot_used[i] < l->slot_used[best]))
			best = i;
	}
	if (best >= 0) {
		l->slot[best] = a;
		l->slot_used[best] = ++l->clock;
	}
	return best;
}

bool lsim_lora_host_get(struct lsim_lora *l, int32_t a)
{
	int32_t victim = -1;
	for (int32_t i = 0; i < l->n_host; i++) {
		if (l->host[i] == a) {
			l->host_used[i] = ++l->clock;
			return true;
		}
		if (victim >= 0 && l->host[victim] < 0)
			continue; /* a free entry found already */
		if (victim < 0 || l->host[i] < 0 || l->host_used[i] < l->host_used[victim])
			victim = i;
	}
	l->host[victim] = a;
	l->host_used[victim] = ++l->clock;
	return false;
}

/* ---- the instance's side ---- */

/* A copy of an adapter arrived: the step waiting for them starts when
 * the last one is in. */
static void lora_moved(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	(void)arg;
	struct lsim_instance *in = ctx;
	struct lsim_lora *l = in->lora;
	if (in->failed || --l->pending > 0)
		return;
	struct lsim_serving *s = in->sv;
	l->wait_ns += (double)(lsim_now(s->eng) - in->step_start);
	lsim_inst_launch_step(in, l->wait_dt, l->wait_tokens, l->wait_ring);
}

/* Adapter a's shard to each GPU of the instance, from host memory (or
 * storage); false (the run stopped) if the links refuse. */
static bool lora_copy(struct lsim_instance *in, bool from_storage)
{
	struct lsim_serving *s = in->sv;
	for (int32_t k = 0; k < in->n_gpus; k++) {
		int32_t path[LSIM_PATH_MAX];
		int32_t gpu = lsim_instance_gpu(in, k);
		int n = from_storage ? lsim_topo_path_storage_to_gpu(&s->topo, gpu, path)
				     : lsim_topo_path_host_to_gpu(&s->topo, gpu, path);
		struct lsim_flow_req fr = {
			.path = path, .n_hops = n, .bytes = in->cfg.lora_adapter_bytes,
			.done = lora_moved, .ctx = in, .kind = LSIM_FLOW_LORA,
		};
		lsim_flow_id id;
		if (n < 0 || lsim_flow_start(s->net, &fr, &id, &s->diag) != 0) {
			if (!s->error)
				s->error = LSIM_ESTATE;
			lsim_stop(s->eng);
			return false;
		}
		in->lora->pending++;
		in->lora->bytes += in->cfg.lora_adapter_bytes;
	}
	return true;
}

int32_t lsim_inst_lora_load(struct lsim_instance *in)
{
	struct lsim_serving *s = in->sv;
	struct lsim_lora *l = in->lora;
	l->n_batch = 0;
	l->pending = 0;
	for (size_t i = 0; i < in->n_sched; i++) {
		int32_t a = s->reqs[in->sched[i]].lora;
		if (a >= 0 && l->n_batch < l->n_slots) {
			bool seen = false;
			for (int32_t j = 0; j < l->n_batch && !seen; j++)
				seen = l->batch[j] == a;
			if (!seen)
				l->batch[l->n_batch++] = a;
		}
	}
	for (int32_t j = 0; j < l->n_batch; j++) {
		int32_t a = l->batch[j];
		int32_t slot = lsim_lora_slot_of(l, a);
		if (slot >= 0) {
			/* in use: most recent in both tiers (vLLM's registered
			 * adapters hold the active ones) */
			l->slot_used[slot] = ++l->clock;
			lsim_lora_host_get(l, a);
			continue;
		}
		if (lsim_lora_slot_take(l, a) < 0) { /* the scheduler's bound broke */
			if (!s->error)
				s->error = LSIM_ESTATE;
			lsim_stop(s->eng);
			return -1;
		}
		bool miss = !lsim_lora_host_get(l, a);
		l->loads++;
		l->misses += miss;
		if (!lora_copy(in, miss))
			return -1;
	}
	if (l->pending > 0)
		for (size_t i = 0; i < in->n_sched; i++) {
			struct lsim_req *r = &s->reqs[in->sched[i]];
			if (!r->lora_waited) {
				r->lora_waited = true;
				l->delayed++;
			}
		}
	return l->pending;
}
