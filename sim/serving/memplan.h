/*
 * memplan.h - vLLM's memory plan: how many KV blocks an instance gets when
 * num_gpu_blocks is not given. As vLLM's GPU worker sizes its cache
 * (determine_available_memory after profile_run), per rank:
 *
 *   kv bytes = total x gpu_memory_utilization - weights - activation peak
 *              - non-torch memory - CUDA-graph memory
 *   blocks   = floor(kv bytes / bytes of one block on that rank)
 *
 * and the instance's count is the least over its ranks (pipeline stages
 * differ: the first holds the embedding, the last the LM head and the
 * sampler). Each term is derived from the model's shapes; docs/memory.md
 * gives the derivation and the sources. Plain arithmetic on the model
 * catalogue and the GPU profile: no state, no allocation.
 */
#ifndef LLMSIM_MEMPLAN_H
#define LLMSIM_MEMPLAN_H

#include <stdint.h>

#include "cluster/hw.h"

/* What the plan reads. */
struct lsim_memplan_in {
	const struct lsim_model_arch *model;
	double total_bytes;	    /* device memory one GPU shows to CUDA */
	double utilization;	    /* gpu_memory_utilization */
	int32_t tp, pp;		    /* tensor- and pipeline-parallel degrees */
	int64_t max_num_batched_tokens; /* tokens of the profiling forward pass */
	int64_t max_num_seqs;	    /* sequences it samples for */
	int64_t block_size;	    /* tokens per KV block */
	/* MoE: experts held by one rank. 0: all of them, each sharded over
	 * the tp ranks (vLLM without expert parallelism); n > 0: n whole
	 * experts per rank (expert parallelism: enable_expert_parallel, the
	 * engine's experts_per_rank). */
	int32_t experts_per_rank;
	/* ranks of the data-parallel group the rank is in (0 or 1: none; an
	 * MoE model's ranks only, vLLM runs a dense model's as independent
	 * engines): a group's ranks hold NCCL communicators as tp > 1 ranks do */
	int32_t dp;
	/* weight offload (cpu_offload_gb): bytes of the rank's weights kept
	 * in host memory, not on the GPU (at most its weights) */
	double cpu_offload_bytes;
	/* LoRA (enable_lora): the GPU buffers vLLM preallocates at load for
	 * max_loras adapters of max_lora_rank, bytes per GPU; counted with
	 * the weights (they are allocated with the model, before profiling) */
	double lora_bytes;
};

/* The plan of the rank that binds (fewest blocks). Bytes per GPU. */
struct lsim_memplan {
	double budget;	     /* total_bytes x utilization */
	double weights;	     /* parameters held by the rank (and LoRA buffers) */
	double act_forward;  /* peak of the profiling forward pass */
	double act_sampler;  /* peak of the dummy sampler run (last stage) */
	double activation;   /* max(act_forward, act_sampler): torch's peak */
	double non_torch;    /* NCCL, cuBLAS and CUDA module memory added */
	double cuda_graphs;  /* 0: vLLM captures after sizing the cache */
	double kv_bytes;     /* what is left for the KV cache */
	double block_bytes;  /* one block on the rank: its layers, its heads */
	int64_t blocks;	     /* floor(kv_bytes / block_bytes); < 1: does not fit */
	int32_t stage;	     /* the binding pipeline stage */
	int32_t layers;	     /* decoder layers on it */
};

struct lsim_engine_cfg;

/* The plan's input for an instance of model on gpu with engine cfg. */
struct lsim_memplan_in lsim_memplan_in_for(const struct lsim_engine_cfg *cfg,
					   const struct lsim_gpu_profile *gpu,
					   const struct lsim_model_arch *model, int32_t tp);

/* Fills *out for in (tp, pp >= 1; block_size >= 1). */
void lsim_memplan_compute(const struct lsim_memplan_in *in, struct lsim_memplan *out);

/* Parameters one rank of stage `stage` holds (of pp stages, tp ranks). */
double lsim_memplan_rank_params(const struct lsim_model_arch *m, int32_t tp, int32_t pp,
				int32_t stage, int32_t experts_per_rank);

/* Decoder layers of stage `stage` of pp, as vLLM's get_pp_indices splits
 * them: L / pp each, one more for each of the L mod pp stages before the
 * last. */
int32_t lsim_memplan_stage_layers(int32_t n_layers, int32_t pp, int32_t stage);

/* The vocabulary as vLLM's VocabParallelEmbedding and ParallelLMHead hold
 * it: padded to a multiple of 64 before it is split over the tp ranks. */
double lsim_memplan_padded_vocab(const struct lsim_model_arch *m);

/* vLLM's non-torch memory increase over the profile for a rank of tp x pp
 * GPUs in a data-parallel group of dp ranks. */
double lsim_memplan_non_torch(int32_t tp, int32_t pp, int32_t dp);

/*
 * Writes one sentence for a refusal into buf: the terms in GiB, the KV
 * bytes a replica of need_tokens needs, and what to write instead (the
 * least gpu_memory_utilization that holds them if one does, the least tp
 * that does). Returns the key the fix names: "gpu_memory_utilization",
 * "tp", or "gpu" when neither helps.
 */
const char *lsim_memplan_explain(const struct lsim_memplan_in *in,
				 const struct lsim_memplan *p, int64_t need_tokens,
				 char *buf, size_t size);

/* Blocks a replica needs to hold need_tokens (at least one). */
int64_t lsim_memplan_blocks_for(int64_t need_tokens, int64_t block_size);

#endif
