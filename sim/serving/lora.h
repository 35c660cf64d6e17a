/*
 * lora.h - LoRA adapters served beside a base model (vLLM's multi-LoRA
 * serving, instances[].enable_lora, docs/lora.md): an adapter's size from
 * the model's shapes, and the instance's adapter state: max_loras GPU
 * slots and a host cache of max_cpu_loras adapters, each least recently
 * used first out. What moves, and when, is the instance's
 * (lora.c, its second half).
 */
#ifndef LLMSIM_LORA_H
#define LLMSIM_LORA_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/hw.h"

/*
 * Parameters of one adapter of rank r on one GPU of a tp group: LoRA on
 * every linear layer of each decoder layer (q, k, v, o, and gate, up,
 * down of a gated MLP, or up, down), each an A of r x d_in and a B of
 * d_out x r. vLLM shards the B of a column-parallel layer (q, k, v, gate,
 * up) and the A of a row-parallel one (o, down) over tp; the other half
 * is whole on every GPU. 0 for an MoE model (not modelled).
 */
double lsim_lora_params(const struct lsim_model_arch *m, int32_t rank, int32_t tp);
/* The same in bytes (the model's dtype, as vLLM's lora_dtype auto). */
double lsim_lora_bytes(const struct lsim_model_arch *m, int32_t rank, int32_t tp);

/* Ranks vLLM accepts for max_lora_rank. */
bool lsim_lora_rank_ok(int64_t rank);

/* An instance's adapters: GPU slots and the host cache (ids >= 0). */
struct lsim_lora {
	int32_t n_slots, n_host;
	int32_t *slot;	     /* adapter in each GPU slot (-1: free) */
	uint64_t *slot_used; /* when each was last in a batch */
	int32_t *host;	     /* adapters in host memory (-1: free) */
	uint64_t *host_used;
	uint64_t clock;
	int32_t *batch; /* scratch: the distinct adapters of a batch */
	int32_t n_batch;
	/* a step waiting for its adapters: flows still moving, its kernel
	 * time, tokens, and whether its all-reduces follow as flows */
	int32_t pending;
	int64_t wait_dt, wait_tokens;
	bool wait_ring;
	/* what it did: adapters copied host -> GPU, read from storage
	 * (host-cache misses), their bytes (all GPUs), requests whose step
	 * waited for a copy, and the time steps waited */
	int64_t loads, misses, delayed;
	double bytes;
	double wait_ns;
};

/* State for n_slots GPU slots and n_host host entries (n_host >=
 * n_slots >= 1); NULL if out of memory. */
struct lsim_lora *lsim_lora_create(int32_t n_slots, int32_t n_host);
void lsim_lora_destroy(struct lsim_lora *l);

/* The slot holding adapter a, or -1. */
int32_t lsim_lora_slot_of(const struct lsim_lora *l, int32_t a);
/* Puts a in a GPU slot: a free one, else the least recently used whose
 * adapter is not in l->batch; -1 if none (cannot happen while the batch
 * has at most n_slots adapters). */
int32_t lsim_lora_slot_take(struct lsim_lora *l, int32_t a);
/* Whether the host cache holds a (made most recently used if so); if
 * not, it is put there, the least recently used evicted when full. */
bool lsim_lora_host_get(struct lsim_lora *l, int32_t a);

#endif
