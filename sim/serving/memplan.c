/*
 * memplan.c - vLLM's memory plan (see memplan.h; docs/memory.md derives
 * each term and gives its sources): weights per rank as vLLM shards them,
 * the activation peak of the profiling run, the non-torch memory, and the
 * KV blocks left, the least over the pipeline stages.
 */
#include <math.h>
#include <stdio.h>

#include "serving/memplan.h"
#include "serving/serving.h"

#define GIB 1073741824.0

double lsim_memplan_padded_vocab(const struct lsim_model_arch *m)
{
	return ceil((double)m->vocab / 64.0) * 64.0;
}

/* KV heads one rank holds: n_kv / tp, or one replicated head when tp is
 * larger than n_kv (vLLM's num_kv_head_replicas). */
static double kv_heads_per_rank(const struct lsim_model_arch *m, int32_t tp)
{
	double h = (double)m->n_kv_heads / (double)tp;
	return h < 1 ? 1 : h;
}

int32_t lsim_memplan_stage_layers(int32_t n_layers, int32_t pp, int32_t stage)
{
	if (pp <= 1)
		return n_layers;
	/* vLLM's get_pp_indices: n / pp each, the remainder one each to the
	 * stages before the last, from the second-to-last backwards (the last
	 * already holds the LM head) */
	int32_t base = n_layers / pp, rem = n_layers % pp;
	return base + (stage >= pp - 1 - rem && stage <= pp - 2 ? 1 : 0);
}

double lsim_memplan_rank_params(const struct lsim_model_arch *m, int32_t tp, int32_t pp,
				int32_t stage, int32_t experts_per_rank)
{
	double h = m->hidden, t = tp, hd = m->head_dim;
	double g = m->gated_mlp ? 3.0 : 2.0;
	/* attention: QKV column-parallel over heads, O row-parallel */
	double attn = h * (m->n_heads * hd / t) + 2.0 * h * kv_heads_per_rank(m, tp) * hd +
		      (m->n_heads * hd / t) * h;
	double mlp;
	if (m->n_experts > 0) {
		/* FusedMoE: without expert parallelism every rank holds all
		 * experts, each one's intermediate split over tp; with it, whole
		 * experts. The router (h x experts) is replicated. */
		double per_expert = experts_per_rank > 0 ? g * h * m->intermediate
							 : g * h * m->intermediate / t;
		double experts = experts_per_rank > 0 ? experts_per_rank : m->n_experts;
		mlp = experts * per_expert + h * m->n_experts;
	} else {
		mlp = g * h * m->intermediate / t;
	}
	double norms = 2.0 * h; /* input and post-attention RMSNorm, replicated */
	double layers = lsim_memplan_stage_layers(m->n_layers, pp, stage);
	double p = layers * (attn + mlp + norms);
	double vocab = lsim_memplan_padded_vocab(m) * h / t; /* vocab-parallel shard */
	bool first = stage == 0, last = stage == pp - 1;
	if (first)
		p += vocab; /* embedding */
	if (last) {
		p += h; /* final norm */
		/* LM head: its own shard unless tied to the embedding on this
		 * same rank */
		if (!(m->tied_embeddings && first))
			p += vocab;
	}
	return p;
}

double lsim_memplan_non_torch(int32_t tp, int32_t pp, int32_t dp)
{
	/* vLLM's memory profile logs: 0.16 GiB on one H100 (PR #12126),
	 * 0.25 GiB with two RTX 4090 at tp 2 (issue #13061). A data-parallel
	 * rank also joins a group of more than one GPU (its DP group, and the
	 * EP group with expert parallelism), so it takes the tp 2 figure too */
	return (int64_t)tp * pp * (dp > 1 ? dp : 1) > 1 ? 0.25 * GIB : 0.16 * GIB;
}

/* Peak of the forward pass over T tokens on one rank, bytes: the residual
 * and the normed hidden state (2 x h) plus the larger of the attention
 * block's buffers (QKV and the attention output) and the MLP's (gate_up,
 * the activated half; for MoE fused_moe's three caches over the top-k). */
static double forward_peak(const struct lsim_model_arch *m, int32_t tp, double tokens,
			   int32_t experts_per_rank)
{
	double h = m->hidden, t = tp, hd = m->head_dim, b = m->bytes_per_param;
	double attn = (m->n_heads * hd / t + 2.0 * kv_heads_per_rank(m, tp) * hd) +
		      m->n_heads * hd / t;
	double inter = experts_per_rank > 0 ? m->intermediate : m->intermediate / t;
	double mlp;
	if (m->n_experts > 0) {
		double k = m->experts_per_token;
		/* cache1 [T, k, 2I], cache2 [T k, I], cache3 [T, k, h]; router
		 * logits in fp32 */
		mlp = k * (2.0 * inter + inter + h) + m->n_experts * 4.0 / b;
	} else {
		mlp = m->gated_mlp ? 2.0 * inter + inter : inter;
	}
	return tokens * (2.0 * h + (attn > mlp ? attn : mlp)) * b;
}

/* Peak of the dummy sampler run over n sequences (PyTorch-native top-k /
 * top-p path), bytes: per logit, the bf16 logits the caller holds (2), the
 * fp32 copy (4), the sorted values (4) and their int64 indices (8), the
 * top-k and top-p masks (1 + 1), the softmax of the sorted logits that the
 * cumulative sum overwrites (4) and the scattered result (4): 28 bytes.
 * Plus the hidden states still held: all T tokens and the n sampled. */
static double sampler_peak(const struct lsim_model_arch *m, double tokens, double seqs)
{
	double logits = seqs * (double)m->vocab;
	return 28.0 * logits + (tokens + seqs) * m->hidden * m->bytes_per_param;
}

void lsim_memplan_compute(const struct lsim_memplan_in *in, struct lsim_memplan *out)
{
	const struct lsim_model_arch *m = in->model;
	int32_t tp = in->tp > 0 ? in->tp : 1, pp = in->pp > 0 ? in->pp : 1;
	double tokens = (double)in->max_num_batched_tokens;
	double seqs = (double)(in->max_num_seqs < in->max_num_batched_tokens
				       ? in->max_num_seqs : in->max_num_batched_tokens);
	double kv_token_layer = 2.0 * kv_heads_per_rank(m, tp) * m->head_dim *
				m->bytes_per_param;
	bool have = false;
	for (int32_t s = 0; s < pp; s++) {
		struct lsim_memplan p = {0};
		p.stage = s;
		p.layers = lsim_memplan_stage_layers(m->n_layers, pp, s);
		p.budget = in->total_bytes * in->utilization;
		p.weights = lsim_memplan_rank_params(m, tp, pp, s, in->experts_per_rank) *
			    m->bytes_per_param;
		/* vLLM's cpu_offload_gb: that many bytes stay in host memory */
		p.weights -= in->cpu_offload_bytes < p.weights ? in->cpu_offload_bytes : p.weights;
		p.weights += in->lora_bytes;
		p.act_forward = forward_peak(m, tp, tokens, in->experts_per_rank);
		p.act_sampler = s == pp - 1 ? sampler_peak(m, tokens, seqs) : 0;
		p.activation = p.act_forward > p.act_sampler ? p.act_forward : p.act_sampler;
		p.non_torch = lsim_memplan_non_torch(tp, pp, in->dp);
		p.cuda_graphs = 0;
		p.kv_bytes = p.budget - p.weights - p.activation - p.non_torch - p.cuda_graphs;
		p.block_bytes = kv_token_layer * p.layers * (double)in->block_size;
		double b = p.block_bytes > 0 ? floor(p.kv_bytes / p.block_bytes) : 0;
		p.blocks = b > 1e15 ? (int64_t)1e15 : b < -1e15 ? (int64_t)-1e15 : (int64_t)b;
		if (!have || p.blocks < out->blocks)
			*out = p;
		have = true;
	}
}

int64_t lsim_memplan_blocks_for(int64_t need_tokens, int64_t block_size)
{
	int64_t bs = block_size > 0 ? block_size : 1;
	int64_t b = (need_tokens + bs - 1) / bs;
	return b < 1 ? 1 : b;
}

const char *lsim_memplan_explain(const struct lsim_memplan_in *in,
				 const struct lsim_memplan *p, int64_t need_tokens,
				 char *buf, size_t size)
{
	const char *key = "gpu";
	int64_t need_blocks = lsim_memplan_blocks_for(need_tokens, in->block_size);
	double kv_need = (double)need_blocks * p->block_bytes;
	double fixed = p->weights + p->activation + p->non_torch + p->cuda_graphs;
	double util = (fixed + kv_need) / in->total_bytes;
	char fix[160] = "";
	int n = 0;
	if (util <= 1.0) {
		n = snprintf(fix, sizeof fix, "write gpu_memory_utilization: %.2f or more",
			     ceil(util * 100.0) / 100.0);
		key = "gpu_memory_utilization";
	}
	int32_t tp = in->tp > 0 ? in->tp : 1;
	for (int32_t t = tp * 2; t <= 64; t *= 2) {
		if (in->model->n_heads % t != 0)
			break;
		struct lsim_memplan_in w = *in;
		w.tp = t;
		struct lsim_memplan q;
		lsim_memplan_compute(&w, &q);
		if (q.blocks >= lsim_memplan_blocks_for(need_tokens, in->block_size)) {
			snprintf(fix + n, sizeof fix - (size_t)n, "%stp: %d",
				 n ? ", or " : "write ", (int)t);
			if (!n)
				key = "tp";
			break;
		}
	}
	if (!fix[0])
		snprintf(fix, sizeof fix, "choose a GPU with more memory or raise pp");
	snprintf(buf, size,
			"per GPU (stage %d of %d, %d layers): weights %.2f GiB + activations "
			"%.2f GiB (profiling pass of %lld tokens, %lld sequences) + non-torch "
			"%.2f GiB leave %.2f GiB of the %.2f GiB budget (%.2f GiB x "
			"gpu_memory_utilization %.2f) for KV, %lld blocks; %lld KV tokens need "
			"%lld blocks (%.2f GiB): %s",
			(int)p->stage + 1, (int)(in->pp > 0 ? in->pp : 1), (int)p->layers,
			p->weights / GIB, p->activation / GIB,
			(long long)in->max_num_batched_tokens,
			(long long)(in->max_num_seqs < in->max_num_batched_tokens
					    ? in->max_num_seqs : in->max_num_batched_tokens),
			p->non_torch / GIB, p->kv_bytes / GIB, p->budget / GIB,
			in->total_bytes / GIB, in->utilization,
			(long long)(p->blocks > 0 ? p->blocks : 0), (long long)need_tokens,
			(long long)need_blocks, kv_need / GIB, fix);
	return key;
}

struct lsim_memplan_in lsim_memplan_in_for(const struct lsim_engine_cfg *cfg,
					   const struct lsim_gpu_profile *gpu,
					   const struct lsim_model_arch *model, int32_t tp)
{
	return (struct lsim_memplan_in){
		.model = model,
		.total_bytes = gpu->hbm_bytes,
		.utilization = cfg->gpu_memory_utilization,
		.tp = tp,
		.pp = cfg->pp > 1 ? (int32_t)cfg->pp : 1,
		.max_num_batched_tokens = cfg->max_num_batched_tokens,
		.max_num_seqs = cfg->max_num_seqs,
		.block_size = cfg->block_size,
		.experts_per_rank = cfg->experts_per_rank,
		.dp = cfg->dp,
		.cpu_offload_bytes = cfg->cpu_offload_gb * GIB,
		.lora_bytes = cfg->enable_lora ? (double)cfg->max_loras *
						 lsim_lora_bytes(model, (int32_t)cfg->max_lora_rank, tp)
					       : 0,
	};
}
