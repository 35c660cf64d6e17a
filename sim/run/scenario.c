/*
 * scenario.c - assembly of a run from a scenario file, the top level: the
 * key tables of every section (the single declaration of each key), path
 * resolution relative to the scenario, binding the sections, the policies,
 * lsim_scenario_load and lsim_scenario_destroy, the effective-config dump
 * stored in every report, and the assembly of a run (check, run) and what
 * it reports. The sections' own work is in scenario_cluster.c (placement,
 * links, the fleet), scenario_instances.c (instance groups, engines, perf
 * backends, prices), scenario_workload.c (the request workload, models,
 * traces, failures), scenario_jobs.c (training jobs) and scenario_runid.c
 * (the run id); scenario_internal.h is what they share.
 */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel/rng.h"
#include "jobs/jobs.h"
#include "run/scenario.h"
#include "run/scenario_internal.h"
#include "run/sim.h"
#include "serving/kvcache.h"

/* ---- sections ---- */

#define T(f) offsetof(struct top_cfg, f)
static const struct lsim_keydef top_keys[] = {
	{"name", LSIM_K_STRING, T(name), "scenario", LSIM_NOBOUNDS, NULL, "name of the scenario"},
	{"seed", LSIM_K_INT, T(seed), "1", 0, 9.0e18, NULL, "seed of every random stream"},
	{"duration", LSIM_K_TIME, T(duration), "0s", 0, 9.0e18, NULL, "stop simulated time here (0: run to completion)"},
	{"data_dir", LSIM_K_STRING, T(data_dir), "", LSIM_NOBOUNDS, NULL, "folder with profiles/, models.yaml and mig.yaml (empty: the shipped calibrate/)"},
	{"macro_steps", LSIM_K_BOOL, T(macro_steps), "false", LSIM_NOBOUNDS, NULL, "simulate each run of decode steps between batch changes as one event (faster; request timings unchanged, a run's output tokens stream back as one message: docs/architecture.md)"},
};
#undef T
static const char *const top_sections[] = {"cluster", "instances", "scheduler",
					   "profiler", "allocator", "qos", "monitor",
					   "adaptor", "synchronizer", "classes",
					   "workload",
					   "power", "output", "network", "background",
					   "failures", "jobs", NULL};

#define N(f) offsetof(struct node_cfg, f)
static const struct lsim_keydef node_keys[] = {
	{"name", LSIM_K_STRING, N(name), "node", LSIM_NOBOUNDS, NULL, "name of this node group"},
	{"gpu", LSIM_K_STRING, N(gpu), NULL, LSIM_NOBOUNDS, NULL, "hardware profile (calibrate/profiles/NAME.yaml)"},
	{"count", LSIM_K_INT, N(count), "1", 1, 1e6, NULL, "nodes in the group"},
	{"gpus_per_node", LSIM_K_INT, N(gpus_per_node), LSIM_SCN_NODE_GPUS_STR, 1, 64, NULL, "GPUs per node"},
	{"host_cache", LSIM_K_BYTES, N(host_cache), "0", 0, 1e15, NULL, "serverless: host DRAM per node that keeps model weights after a load, least recently used dropped first (0: none; docs/serverless.md)"},
	{"ssd_bw", LSIM_K_BW, N(ssd_bw), "0", 0, 1e13, NULL, "serverless: read bandwidth of each node's local SSD holding weights (0: no SSD tier)"},
	{"ssd_capacity", LSIM_K_BYTES, N(ssd_capacity), "0", 0, 1e16, NULL, "serverless: bytes of weights each node's SSD holds (with ssd_bw)"},
	{"ssd_latency", LSIM_K_TIME, N(ssd_latency), "100us", 0, 1e10, NULL, "serverless: latency of a read from the local SSD"},
	{"ssd_preload", LSIM_K_BOOL, N(ssd_preload), "false", LSIM_NOBOUNDS, NULL, "serverless: every instance group's weights are on each node's SSD at start (in group order, as many as fit); else the SSD fills with what is loaded from remote storage"},
};
#undef N

#define I(f) offsetof(struct inst_cfg, f)
static const struct lsim_keydef inst_keys[] = {
	{"name", LSIM_K_STRING, I(name), "instance", LSIM_NOBOUNDS, NULL, "name of this instance group"},
	{"model", LSIM_K_STRING, I(model), "Llama-3.1-8B", LSIM_NOBOUNDS, NULL, "model from the catalogue (calibrate/models.yaml)"},
	{"gpu", LSIM_K_STRING, I(gpu), NULL, LSIM_NOBOUNDS, NULL, "hardware profile of its GPUs, or cheapest: the GPU kind with a profile (in the cluster, if any) that holds a replica at the lowest price per replica-hour in the price file"},
	{"gpu_from", LSIM_K_STRING, I(gpu_from), "", LSIM_NOBOUNDS, NULL, "with gpu: cheapest, the GPU kinds to choose from, '|'-separated (e.g. H100-SXM|A100-80GB-SXM; empty: every kind in the price file)"},
	{"tp", LSIM_K_INT, I(tp), "1", 1, 64, NULL, "tensor-parallel degree (GPUs per pipeline stage; without a cluster section a replica's tp x pp x data_parallel_size GPUs are one node's, at most 8)"},
	{"pp", LSIM_K_INT, I(eng.pp), "1", 1, 64, NULL, "pipeline-parallel stages of tp GPUs each (in one node if one has room, else a node per stage); the layers split as vLLM splits them (the embedding on the first stage, the LM head and sampler on the last); up to pp batches in flight, each stage computing one at a time and sending its activations to the next by NCCL send/recv (docs/parallelism.md)"},
	{"replicas", LSIM_K_INT, I(replicas), "1", 0, 1e5, NULL, "number of replicas (with data_parallel_size D, each one a data-parallel group of D ranks)"},
	{"data_parallel_size", LSIM_K_INT, I(dp), "1", 1, 64, NULL, "vLLM's data_parallel_size: each replica is D engine ranks of tp GPUs, side by side in one node, each with its own scheduler and KV cache, behind vLLM's DP load balancer (4 x waiting + running on counts published every 100 ms); for an MoE model the ranks step in lockstep and need enable_expert_parallel (docs/parallelism.md)"},
	{"enable_expert_parallel", LSIM_K_BOOL, I(ep), "false", LSIM_NOBOUNDS, NULL, "vLLM's enable_expert_parallel: an MoE model's experts split over the data_parallel_size ranks (tp 1, perf: table), each rank's expert time for its share of every rank's tokens plus, per layer, vLLM's default dispatch and combine (an all-gather and a reduce-scatter) on the GPUs' fabric (docs/parallelism.md)"},
	{"perf", LSIM_K_ENUM, I(perf), "roofline", LSIM_NOBOUNDS, "roofline|table|service", "perf model backend"},
	{"perf_table", LSIM_K_STRING, I(perf_table), "", LSIM_NOBOUNDS, NULL, "profile folder for perf: table (holds tp<N>/; the model and gpu its meta.yaml names must be the instance's)"},
	{"perf_table_other_gpu", LSIM_K_BOOL, I(perf_table_other_gpu), "false", LSIM_NOBOUNDS, NULL, "a what-if: time the group with a perf_table measured on another GPU than its gpu (that GPU's kernel times with this profile's fabric, memory, power and price); false: such a table is refused"},
	{"cpu_overhead", LSIM_K_TIME, I(cpu_overhead), "0s", 0, 1e10, NULL, "CPU time added to every iteration"},
	{"io_in_bytes", LSIM_K_DOUBLE, I(eng.io_in_bytes), "0", 0, 1e9, NULL, "bytes per token of a step copied host to GPU before its kernels, as a flow on the GPU's PCIe path (0: none; tp 1, pp 1, with a cluster; not with `data_parallel_size` > 1 on an MoE model)"},
	{"io_out_bytes", LSIM_K_DOUBLE, I(eng.io_out_bytes), "0", 0, 1e9, NULL, "bytes per token of a step copied GPU to host after its kernels; the step ends when they arrive (0: none)"},
	{"max_num_seqs", LSIM_K_INT, I(eng.max_num_seqs), "256", 1, 1e6, NULL, "most sequences in a batch"},
	{"max_num_batched_tokens", LSIM_K_INT, I(eng.max_num_batched_tokens), "2048", 1, 1e7, NULL, "token budget of one iteration"},
	{"block_size", LSIM_K_INT, I(eng.block_size), "16", 1, 4096, NULL, "tokens per KV block"},
	{"num_gpu_blocks", LSIM_K_INT, I(eng.num_gpu_blocks), "0", 0, LSIM_KV_BLOCKS_MAX, NULL, "KV blocks (0: vLLM's memory plan, docs/memory.md: memory x gpu_memory_utilization - weights - activation peak - non-torch, least over the ranks)"},
	{"gpu_memory_utilization", LSIM_K_DOUBLE, I(eng.gpu_memory_utilization), "0.9", 0.05, 1, NULL, "fraction of the GPU's memory vLLM plans with: weights, the profiling pass's activations, non-torch memory and KV (docs/memory.md)"},
	{"max_model_len", LSIM_K_INT, I(eng.max_model_len), "0", 0, 1e8, NULL, "longest prompt+output accepted (0: the model's)"},
	{"enable_prefix_caching", LSIM_K_BOOL, I(eng.enable_prefix_caching), "true", LSIM_NOBOUNDS, NULL, "reuse KV blocks by content hash"},
	{"enable_chunked_prefill", LSIM_K_BOOL, I(eng.enable_chunked_prefill), "true", LSIM_NOBOUNDS, NULL, "split prompts across iterations (false: max_num_batched_tokens must be at least max_model_len, as vLLM requires, or a longer request could never be scheduled)"},
	{"service_time", LSIM_K_TIME, I(service_time), "1s", 1, 1e15, NULL, "perf: service - mean service time"},
	{"service_distribution", LSIM_K_ENUM, I(service_dist), "exponential", LSIM_NOBOUNDS, "exponential|deterministic", "perf: service - service time distribution"},
	{"min_kv_tokens", LSIM_K_INT, I(min_kv_tokens), "2048", 0, 1e8, NULL, "KV capacity (tokens) a replica must have; check and run refuse a memory plan short of it"},
	{"preemption_mode", LSIM_K_ENUM, I(eng.preemption_mode), "recompute", LSIM_NOBOUNDS, "recompute|swap", "a preempted request's KV is dropped and recomputed, or swapped to host memory over PCIe (needs a cluster)"},
	{"kv_reserve", LSIM_K_ENUM, I(eng.kv_reserve), "none", LSIM_NOBOUNDS, "none|predicted", "admission's KV check: blocks for what the request needs now (vLLM), or also for its predicted output (the profiler's), counting what running requests reserved and do not hold yet: fewer preemptions when predictions are good"},
	{"swap_space", LSIM_K_BYTES, I(swap_space), "4GiB", 0, 1e15, NULL, "swap: host memory for swapped KV, per GPU (vLLM's swap_space)"},
	{"kv_offload", LSIM_K_ENUM, I(eng.kv_offload), "none", LSIM_NOBOUNDS, "none|host", "KV offload (vLLM's CPU KV offloading, LMCache's CPU backend): host - prefix-cache blocks the GPU evicts are copied to host memory (a flow on each GPU's PCIe path) and a later request whose prefix is found there reloads them (a flow back) before its prefill instead of computing them (needs a cluster and enable_prefix_caching; docs/memory.md)"},
	{"kv_offload_space", LSIM_K_BYTES, I(kv_offload_space), "0", 0, 1e15, NULL, "kv_offload: host - host memory for offloaded KV blocks, per GPU, least recently used evicted first"},
	{"cpu_offload_gb", LSIM_K_DOUBLE, I(eng.cpu_offload_gb), "0", 0, 1e6, NULL, "vLLM's cpu_offload_gb: GiB (2^30 bytes) of each GPU's weights kept in host memory; the memory plan counts that much less weight per GPU, and every step first copies it host to GPU as a flow on each GPU's PCIe path (kind weights), then runs its kernels (needs a cluster; pp 1; docs/memory.md)"},
	{"enable_lora", LSIM_K_BOOL, I(eng.enable_lora), "false", LSIM_NOBOUNDS, NULL, "vLLM's enable_lora: serve LoRA adapters (workload.lora) beside the base model; max_loras GPU slots preallocated at max_lora_rank come out of the KV cache, an adapter not in a slot is copied host to GPU (read from storage first if not among the max_cpu_loras in host memory) as flows of kind lora before the step that needs it (needs a cluster; pp 1; a dense model; preemption_mode recompute; kv_offload none; docs/lora.md)"},
	{"max_loras", LSIM_K_INT, I(eng.max_loras), "1", 1, 256, NULL, "enable_lora: vLLM's max_loras, the distinct adapters one step may run (its GPU slots); a waiting request whose adapter would exceed it is skipped for that step"},
	{"max_lora_rank", LSIM_K_INT, I(eng.max_lora_rank), "16", 1, 512, NULL, "enable_lora: vLLM's max_lora_rank (1, 8, 16, 32, 64, 128, 256, 320 or 512): the rank the GPU slots are allocated for; workload.lora.rank may not exceed it"},
	{"max_cpu_loras", LSIM_K_INT, I(eng.max_cpu_loras), "0", 0, 1e6, NULL, "enable_lora: vLLM's max_cpu_loras, adapters kept in host memory, least recently used evicted (0: max_loras; at least max_loras)"},
	{"price", LSIM_K_STRING, I(price), "", LSIM_NOBOUNDS, NULL, "an offer of the price file (e.g. aws-p5.48xlarge), or cheapest (the lowest per-GPU offer for its GPU kind): a replica pays its GPUs' share, with the offer's billing granularity and minimum (empty: the GPU profile's price, billed by the nanosecond)"},
	{"spot", LSIM_K_BOOL, I(spot), "false", LSIM_NOBOUNDS, NULL, "run on spot capacity and pay the offer's spot price (all replicas, or those beyond on_demand_base and on_demand_percent)"},
	{"on_demand_base", LSIM_K_INT, I(on_demand_base), "0", 0, 1e5, NULL, "spot: this many of the group's live replicas run on demand (AWS OnDemandBaseCapacity)"},
	{"on_demand_percent", LSIM_K_DOUBLE, I(on_demand_percent), "0", 0, 100, NULL, "spot: percent of the live replicas above the base that run on demand, rounded up (AWS OnDemandPercentageAboveBaseCapacity)"},
	{"min_replicas", LSIM_K_INT, I(min_replicas), "-1", -1, 1e5, NULL, "autoscaling: fewest replicas the adaptor may leave (-1: replicas)"},
	{"max_replicas", LSIM_K_INT, I(max_replicas), "-1", -1, 1e5, NULL, "autoscaling: most replicas the adaptor may start (-1: replicas)"},
	{"provision_time", LSIM_K_TIME, I(provision_time), "0s", 0, 1e13, NULL, "autoscaling: acquiring a machine before a new replica's cold start"},
	{"capacity_rps", LSIM_K_DOUBLE, I(capacity_rps), "0", 0, 1e9, NULL, "autoscaling: requests per second one replica is meant to serve (adaptor hint; 0: not given)"},
	{"role", LSIM_K_ENUM, I(role), "both", LSIM_NOBOUNDS, "both|prefill|decode", "disaggregation: prefill-only instances hand each request to a decode instance of the model after its first token; the KV moves over the links (needs a cluster)"},
	{"first_token", LSIM_K_ENUM, I(eng.first_token), "prefill", LSIM_NOBOUNDS, "prefill|decode", "role: prefill - the client's first token (TTFT) comes from this instance when computed (Splitwise), or from the decode instance once the KV has arrived (vLLM/llm-d disaggregated serving: TTFT includes the transfer)"},
	{"cold_start", LSIM_K_BOOL, I(cold_start), "false", LSIM_NOBOUNDS, NULL, "start by loading the weights from storage over the network links (needs a cluster), then engine_init"},
	{"engine_init", LSIM_K_TIME, I(engine_init), "0s", 0, 1e13, NULL, "cold start: engine start-up after the weights are in (CUDA graphs, KV allocation)"},
	{"serverless", LSIM_K_BOOL, I(serverless), "false", LSIM_NOBOUNDS, NULL, "scale to zero after keep_alive idle, and from zero on the next request (replicas: the instances at start, 0 allowed); the group serves its own checkpoint named by the group's name, of its model's size (docs/serverless.md)"},
	{"keep_alive", LSIM_K_TIME, I(keep_alive), "60s", 0, 1e15, NULL, "serverless: an instance with no request outstanding for this long is scaled in and its GPUs freed"},
	/* GPU sharing: keep these last (LSIM_SCN_SHARE_KEYS) */
	{"mig", LSIM_K_STRING, I(mig), "", LSIM_NOBOUNDS, NULL, "a MIG profile of its GPU kind (e.g. 3g.40gb on A100-80GB-SXM): each replica runs in one MIG slice, with the slice's share of the SMs (g/7), of the memory and its bandwidth (m/8); groups naming one gpu_group are slices of one GPU, at most 7 compute and 8 memory slices (docs/sharing.md)"},
	{"share", LSIM_K_ENUM, I(share), "none", LSIM_NOBOUNDS, "none|mps|time_slice", "co-location on one GPU with the other groups of its gpu_group: mps (its gpu_fraction of the SMs, the memory bandwidth split among the members with work) or time_slice (the whole GPU 1/k of the time while k members have work, each slice paying switch_cost); docs/sharing.md"},
	{"gpu_group", LSIM_K_STRING, I(gpu_group), "", LSIM_NOBOUNDS, NULL, "mig or share: the groups naming the same gpu_group share one GPU (one replica each); their gpu_memory_utilization must sum to at most 1 (mps, time_slice); with a cluster, one GPU of a node, placed with the first member and given to no other group; its idle power and price count once, split among the members (docs/sharing.md)"},
	{"gpu_fraction", LSIM_K_DOUBLE, I(gpu_fraction), "1", 0.01, 1, NULL, "share: mps - its fraction of the GPU's SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE / 100); the members' fractions sum to at most 1"},
	{"time_slice", LSIM_K_TIME, I(time_slice), "0s", 0, 1e12, NULL, "share: time_slice - the length of one time slice (required)"},
	{"switch_cost", LSIM_K_TIME, I(switch_cost), "0s", 0, 1e12, NULL, "share: time_slice - the context switch each time slice pays (required: no sourced default)"},
};
#undef I

static const char *const scheduler_sections[] = {"router", "queue", NULL};

#define C(f) offsetof(struct lsim_qos_class, f)
static const struct lsim_keydef class_keys[] = {
	{"name", LSIM_K_STRING, C(name), NULL, LSIM_NOBOUNDS, NULL, "name of the class"},
	{"share", LSIM_K_DOUBLE, C(share), NULL, 0, 1, NULL, "fraction of requests in the class"},
	{"priority", LSIM_K_INT, C(priority), "0", 0, 999, NULL, "smaller is more urgent (scheduler.queue: priority)"},
	{"ttft", LSIM_K_TIME, C(ttft), "0s", 0, 1e13, NULL, "time-to-first-token target (0: none); edf deadline"},
	{"tpot", LSIM_K_TIME, C(tpot), "0s", 0, 1e13, NULL, "time-per-output-token target (0: none)"},
	{"e2e", LSIM_K_TIME, C(e2e), "0s", 0, 1e13, NULL, "end-to-end target (0: none)"},
};
#undef C

#define MS(f) offsetof(struct model_share, f)
const struct lsim_keydef lsim_scn_model_share_keys[] = {
	{"name", LSIM_K_STRING, MS(name), NULL, LSIM_NOBOUNDS, NULL, "model (an instance group's model or name)"},
	{"share", LSIM_K_DOUBLE, MS(share), NULL, 0, 1, NULL, "fraction of requests for it"},
};
const size_t lsim_scn_n_model_share_keys = N_OF(lsim_scn_model_share_keys);
#undef MS

#define W(f) offsetof(struct wl_cfg, f)
static const struct lsim_keydef wl_keys[] = {
	{"kind", LSIM_K_ENUM, W(kind), "generator", LSIM_NOBOUNDS, "generator|csv|jsonl|auto", "synthetic, or a trace file (auto: format from its header)"},
	{"arrival", LSIM_K_ENUM, W(arrival), "poisson", LSIM_NOBOUNDS, "poisson|gamma|weibull|mmpp|diurnal|spikes", "generator: arrival process"},
	{"rate", LSIM_K_DOUBLE, W(rate), "1", 1e-9, 1e9, NULL, "generator: mean requests per second"},
	{"cv", LSIM_K_DOUBLE, W(cv), "1", 1e-3, 100, NULL, "generator (gamma, weibull): coefficient of variation of inter-arrivals"},
	{"rate_on", LSIM_K_DOUBLE, W(rate_on), "10", 0, 1e9, NULL, "generator (mmpp): requests per second in the on state"},
	{"rate_off", LSIM_K_DOUBLE, W(rate_off), "0", 0, 1e9, NULL, "generator (mmpp): requests per second in the off state"},
	{"mean_on", LSIM_K_TIME, W(mean_on), "10s", 1, 1e15, NULL, "generator (mmpp): mean length of an on period"},
	{"mean_off", LSIM_K_TIME, W(mean_off), "10s", 1, 1e15, NULL, "generator (mmpp): mean length of an off period"},
	{"amplitude", LSIM_K_DOUBLE, W(amplitude), "0.5", 0, 0.999, NULL, "generator (diurnal): relative swing of the rate"},
	{"period", LSIM_K_TIME, W(period), "24h", 1, 1e15, NULL, "generator (diurnal): period of the rate"},
	{"spike_every", LSIM_K_TIME, W(spike_every), "60s", 1, 1e15, NULL, "generator (spikes): time between spike starts"},
	{"spike_length", LSIM_K_TIME, W(spike_length), "5s", 1, 1e15, NULL, "generator (spikes): length of a spike"},
	{"spike_factor", LSIM_K_DOUBLE, W(spike_factor), "5", 1, 1e6, NULL, "generator (spikes): rate multiplier inside a spike"},
	{"count", LSIM_K_INT, W(count), "1000", 0, 1e12, NULL, "generator: requests (0: until duration)"},
	{"duration", LSIM_K_TIME, W(duration), "0s", 0, 9.0e18, NULL, "generator: stop arrivals here (0: use count)"},
	{"path", LSIM_K_STRING, W(path), "", LSIM_NOBOUNDS, NULL, "csv/jsonl: trace file, relative to the scenario"},
	{"time_format", LSIM_K_ENUM, W(time_format), "datetime", LSIM_NOBOUNDS, "seconds|milliseconds|datetime", "csv/jsonl mapping: arrival column format"},
	{"arrival_column", LSIM_K_STRING, W(arrival_column), "TIMESTAMP", LSIM_NOBOUNDS, NULL, "csv (jsonl: with the other two, a key mapping): arrival time column"},
	{"prompt_column", LSIM_K_STRING, W(prompt_column), "ContextTokens", LSIM_NOBOUNDS, NULL, "csv/jsonl mapping: prompt tokens column"},
	{"output_column", LSIM_K_STRING, W(output_column), "GeneratedTokens", LSIM_NOBOUNDS, NULL, "csv/jsonl mapping: output tokens column"},
	{"class_column", LSIM_K_STRING, W(class_column), "", LSIM_NOBOUNDS, NULL, "csv/jsonl/auto: a column naming each request's QoS class (instead of shares)"},
	{"model_column", LSIM_K_STRING, W(model_column), "", LSIM_NOBOUNDS, NULL, "csv/jsonl/auto: a column naming each request's model (an instance group's model or name)"},
	{"tenant_column", LSIM_K_STRING, W(tenant_column), "", LSIM_NOBOUNDS, NULL, "csv/jsonl/auto: a column naming each request's tenant (instead of the trace's position)"},
	{"lora_column", LSIM_K_STRING, W(lora_column), "", LSIM_NOBOUNDS, NULL, "csv/jsonl/auto: a column naming each request's LoRA adapter (empty, or JSONL null: the base model); names numbered by first appearance, each of rank workload.lora.rank (instead of workload.lora.adapters; docs/lora.md)"},
	{"lengths_from", LSIM_K_STRING, W(lengths_from), "", LSIM_NOBOUNDS, NULL, "generator: draw (prompt, output) pairs jointly from this trace's rows (any recognised format)"},
	{"window_start", LSIM_K_TIME, W(window_start), "0s", 0, 9.0e18, NULL, "trace: keep arrivals from this time of the trace (re-based to 0)"},
	{"window_end", LSIM_K_TIME, W(window_end), "0s", 0, 9.0e18, NULL, "trace: ... and before this time (0: to the end)"},
	{"time_scale", LSIM_K_DOUBLE, W(time_scale), "1", 1e-6, 1e6, NULL, "trace: multiply arrival times (0.5 = twice the rate)"},
	{"rate_scale", LSIM_K_DOUBLE, W(rate_scale), "1", 1e-6, 64, NULL, "trace: scale the rate: below 1 by thinning, above 1 by overlaying shifted copies"},
	{"keep", LSIM_K_DOUBLE, W(keep), "1", 1e-9, 1, NULL, "trace: keep each request with this probability (thinning)"},
	{"repeat", LSIM_K_INT, W(repeat), "1", 1, 1e6, NULL, "trace: play the (windowed) trace this many times back to back"},
	{"on_error", LSIM_K_ENUM, W(on_error), "fail", LSIM_NOBOUNDS, "fail|skip", "trace: stop at a malformed line, or skip and count it"},
	{"zero_output", LSIM_K_ENUM, W(zero_output), "one", LSIM_NOBOUNDS, "one|skip|fail", "trace rows with 0 output tokens (BurstGPT's failed requests): serve with one token, drop, or count as failed at arrival"},
};
#undef W
static const char *const wl_sections[] = {"prompt", "output", "traces", "models", "lora", NULL};

#define LW(f) offsetof(struct lora_wl_cfg, f)
static const struct lsim_keydef lora_wl_keys[] = {
	{"adapters", LSIM_K_INT, LW(adapters), "0", 0, 1e6, NULL, "LoRA adapters requests are drawn from, numbered 0 .. adapters-1 (0: none, every request uses the base model); needs enable_lora on every instance group"},
	{"rank", LSIM_K_INT, LW(rank), "16", 1, 512, NULL, "the adapters' rank r (at most each group's max_lora_rank): an adapter is r x (d_in + d_out) parameters per linear layer, in the model's dtype (docs/lora.md)"},
	{"popularity", LSIM_K_ENUM, LW(popularity), "uniform", LSIM_NOBOUNDS, "uniform|zipf", "which adapter a request uses: uniform, or zipf (adapter k with probability proportional to (k + 1)^-alpha)"},
	{"alpha", LSIM_K_DOUBLE, LW(alpha), "1", 0, 10, NULL, "popularity: zipf - its exponent"},
	{"share", LSIM_K_DOUBLE, LW(share), "1", 0, 1, NULL, "fraction of requests that use an adapter (the rest the base model); drawn, with the adapter, from a stream of their own"},
};
#undef LW

#define L(f) offsetof(struct len_cfg, f)
static const struct lsim_keydef len_keys[] = {
	{"dist", LSIM_K_ENUM, L(dist), "fixed", LSIM_NOBOUNDS, "fixed|uniform|lognormal|empirical|zipf", "length distribution"},
	{"value", LSIM_K_DOUBLE, L(value), "128", 1, 1e8, NULL, "fixed: the length"},
	{"low", LSIM_K_DOUBLE, L(low), "1", 1, 1e8, NULL, "uniform: smallest length"},
	{"high", LSIM_K_DOUBLE, L(high), "1024", 1, 1e8, NULL, "uniform: largest length"},
	{"mean", LSIM_K_DOUBLE, L(mean), "512", 1, 1e8, NULL, "lognormal: mean length"},
	{"stddev", LSIM_K_DOUBLE, L(stddev), "256", 0, 1e8, NULL, "lognormal: standard deviation of the length"},
	{"exponent", LSIM_K_DOUBLE, L(exponent), "1.1", 0.01, 10, NULL, "zipf: P(k) ~ k^-exponent over [min, max]"},
	{"min", LSIM_K_INT, L(min), "1", 1, 1e8, NULL, "clamp: smallest length"},
	{"max", LSIM_K_INT, L(max), "0", 0, 1e8, NULL, "clamp: largest length (0: none)"},
};
#undef L
static const char *const len_sections[] = {"values", NULL};

#define PW(f) offsetof(struct power_cfg, f)
static const struct lsim_keydef power_keys[] = {
	{"pue", LSIM_K_DOUBLE, PW(pue), "1.0", 1, 5, NULL, "power usage effectiveness of the facility"},
	{"alpha", LSIM_K_DOUBLE, PW(alpha), "0.7", 0.05, 10, NULL, "GPU power idle + (tdp - idle) u^alpha at utilisation u (work at peak FLOP/s or HBM bandwidth / time; the Splitwise A100 runs fit 0.7)"},
	{"carbon_intensity", LSIM_K_DOUBLE, PW(carbon_intensity), "481", 0, 5000, NULL, "grid gCO2 per kWh (world 2023, Ember), when there is no carbon_trace"},
	{"carbon_trace", LSIM_K_STRING, PW(carbon_trace), "", LSIM_NOBOUNDS, NULL, "CSV of grid intensity (time_s or timestamp, gco2_per_kwh), relative to the scenario"},
	{"carbon_period", LSIM_K_TIME, PW(carbon_period), "0s", 0, 9e18, NULL, "carbon_trace repeats with this period (0: holds its last value)"},
	{"prices", LSIM_K_STRING, PW(prices), "", LSIM_NOBOUNDS, NULL, "price file for instances[].price (empty: the shipped calibrate/prices.yaml)"},
};
#undef PW

#define NC(f) offsetof(struct net_cfg, f)
static const struct lsim_keydef net_keys[] = {
	{"gpus_per_switch", LSIM_K_INT, NC(gpus_per_switch), "0", 0, 64, NULL, "GPUs sharing one PCIe switch uplink to the host (0: the GPU profile's pcie_switch_gpus)"},
	{"nodes_per_tor", LSIM_K_INT, NC(nodes_per_tor), "32", 1, 1e5, NULL, "nodes under one top-of-rack switch"},
	{"pcie_bw", LSIM_K_BW, NC(pcie_bw), "0", 0, 1e13, NULL, "GPU PCIe link, per direction (0: the GPU profile's pcie_bw)"},
	{"host_bw", LSIM_K_BW, NC(host_bw), "0", 0, 1e13, NULL, "PCIe switch uplink / root complex, shared by both directions (0: the GPU profile's pcie_bw, a x16 link of the GPU's PCIe generation)"},
	{"nvlink_bw", LSIM_K_BW, NC(nvlink_bw), "0", 0, 1e13, NULL, "GPU NVLink to the NVSwitch, per direction (0: the GPU profile's nvlink_bw; none if that is 0)"},
	{"nic_bw", LSIM_K_BW, NC(nic_bw), "400GB/s", 1, 1e13, NULL, "node NIC to its ToR, per direction"},
	{"oversubscription", LSIM_K_DOUBLE, NC(oversubscription), "1", 0.01, 1000, NULL, "ToR downlink : uplink capacity"},
	{"spine_bw", LSIM_K_BW, NC(spine_bw), "0", 0, 1e15, NULL, "the spine as one shared link (0: non-blocking)"},
	{"storage_bw", LSIM_K_BW, NC(storage_bw), "50GB/s", 1, 1e13, NULL, "storage service egress (weights, checkpoint reads) and ingress (checkpoint writes), each"},
	{"pcie_latency", LSIM_K_TIME, NC(pcie_latency), "1us", 0, 1e10, NULL, "PCIe link latency"},
	{"host_latency", LSIM_K_TIME, NC(host_latency), "500ns", 0, 1e10, NULL, "switch uplink latency"},
	{"nvlink_latency", LSIM_K_TIME, NC(nvlink_latency), "1us", 0, 1e10, NULL, "NVLink latency"},
	{"nic_latency", LSIM_K_TIME, NC(nic_latency), "2us", 0, 1e10, NULL, "NIC, cable and ToR port"},
	{"tor_latency", LSIM_K_TIME, NC(tor_latency), "1us", 0, 1e10, NULL, "ToR uplink to the spine"},
	{"spine_latency", LSIM_K_TIME, NC(spine_latency), "1us", 0, 1e10, NULL, "spine layer"},
	{"storage_latency", LSIM_K_TIME, NC(storage_latency), "100us", 0, 1e12, NULL, "storage service first byte"},
	{"messages", LSIM_K_BOOL, NC(messages), "true", LSIM_NOBOUNDS, NULL, "requests reach their instance's node from the front end, and each step's tokens go back, as messages through the network queues"},
	{"allreduce_on_links", LSIM_K_BOOL, NC(allreduce_on_links), "true", LSIM_NOBOUNDS, NULL, "tp > 1 (roofline, or table without a measured allreduce.csv): each step's ring all-reduce data moves as flows between the group's GPUs (contending on NVLink or PCIe) after its compute; with enable_expert_parallel, each step's dispatch and combine data between the data-parallel ranks' GPUs"},
	{"util_window", LSIM_K_TIME, NC(util_window), "100ms", 1000, 1e13, NULL, "time constant of the PCIe load that slows kernels (pcie_interference)"},
};
#undef NC

#define J(f) offsetof(struct job_cfg, f)
const struct lsim_keydef lsim_scn_job_keys[] = {
	{"source", LSIM_K_ENUM, J(source), "csv", LSIM_NOBOUNDS, "csv|alibaba|philly|stats", "a job CSV (docs/jobs.md), an Alibaba GPU v2023 pod list, jobs drawn from a runtime distribution (path: a runtime,count CSV such as the Philly one), or from a cluster's published statistics (path: the Acme/Helios summary CSV, with stats_cluster)"},
	{"stats_cluster", LSIM_K_STRING, J(cluster_name), "Philly", LSIM_NOBOUNDS, NULL, "stats: the cluster's row (Seren, Kalos, Philly, Helios, PAI)"},
	{"quotas", LSIM_K_STRING, J(quotas), "", LSIM_NOBOUNDS, NULL, "virtual clusters: most GPUs each tenant may hold, \"alice:16,bob:8\" (empty: no limits)"},
	{"path", LSIM_K_STRING, J(path), NULL, LSIM_NOBOUNDS, NULL, "the file, relative to the scenario"},
	{"scheduler", LSIM_K_STRING, J(scheduler), "fcfs", LSIM_NOBOUNDS, NULL, "fcfs | sjf | easy_backfill | las"},
	{"allocator", LSIM_K_STRING, J(allocator), "static", LSIM_NOBOUNDS, NULL, "static | dynamic | time_packing"},
	{"count", LSIM_K_INT, J(count), "1000", 1, 1e8, NULL, "philly: jobs to draw"},
	{"load", LSIM_K_DOUBLE, J(load), "0.8", 0.001, 100, NULL, "philly: offered GPU-time / the cluster's GPU capacity"},
	{"mean_gpus", LSIM_K_DOUBLE, J(mean_gpus), "0", 0, 1e4, NULL, "philly: mean GPUs per job (0: the Philly mean, 1.928)"},
	{"ckpt_interval", LSIM_K_TIME, J(ckpt_interval), "0s", 0, 1e15, NULL, "philly: checkpoint every this much run time (0: none)"},
	{"gpu_mtbf", LSIM_K_TIME, J(gpu_mtbf), "0s", 0, 9e18, NULL, "each GPU a job holds fails after an exponential time of this mean (0: none)"},
	{"efficiency", LSIM_K_DOUBLE, J(efficiency), "0", 0, 1, NULL, "model jobs: fraction of peak FLOP/s (0: the profile's mfu_max)"},
	{"storage_bw", LSIM_K_BW, J(storage_bw), "0", 0, 1e13, NULL, "checkpoint writes and reads (0: network.storage_bw)"},
	{"traffic", LSIM_K_ENUM, J(traffic), "links", LSIM_NOBOUNDS, "links|bandwidth", "model jobs' gradient all-reduces and checkpoint writes move as flows on the cluster's links, contending with all other traffic; or take bytes / bandwidth (NVLink rate, storage_bw) uncontended"},
};
const size_t lsim_scn_n_job_keys = N_OF(lsim_scn_job_keys);
#undef J

#define F(f) offsetof(struct fail_cfg, f)
static const struct lsim_keydef fail_keys[] = {
	{"mtbf", LSIM_K_TIME, F(mtbf), "0s", 0, 9e18, NULL, "mean time between failures of each instance (0: none)"},
	{"distribution", LSIM_K_ENUM, F(distribution), "exponential", LSIM_NOBOUNDS, "exponential|weibull", "time to failure: exponential, or Weibull of the given shape with mean mtbf"},
	{"shape", LSIM_K_DOUBLE, F(shape), "1.5", 0.05, 20, NULL, "weibull: shape k (< 1: infant mortality, > 1: wear-out)"},
	{"trace", LSIM_K_STRING, F(trace), "", LSIM_NOBOUNDS, NULL, "CSV of failures (columns time_s, instance), relative to the scenario"},
	{"gpu_mtbf", LSIM_K_TIME, F(gpu_mtbf), "0s", 0, 9e18, NULL, "mean time between failures of each GPU of an instance (0: none, same distribution as mtbf): the first of its tp x pp GPUs to fail fails the instance"},
	{"coordinator_mtbf", LSIM_K_TIME, F(coordinator_mtbf), "0s", 0, 9e18, NULL, "mean time between coordinator failures (0: none); each costs the synchronizer's election time"},
	{"node_mtbf", LSIM_K_TIME, F(node_mtbf), "0s", 0, 9e18, NULL, "mean time between failures of each node (0: none): its instances fail together and its GPUs stay down"},
	{"spot_mtbr", LSIM_K_TIME, F(spot_mtbr), "0s", 0, 9e18, NULL, "spot instances: mean time between reclaims of each (exponential; 0: none)"},
	{"spot_warning", LSIM_K_TIME, F(spot_warning), "2min", 0, 1e13, NULL, "notice before a reclaim (AWS: two minutes): the instance drains, a replacement starts"},
	{"replace", LSIM_K_BOOL, F(replace), "true", LSIM_NOBOUNDS, NULL, "start a replacement when a failure is detected (provisioning and a cold start)"},
};
#undef F

#define B(f) offsetof(struct bg_cfg, f)
static const struct lsim_keydef bg_keys[] = {
	{"gpu", LSIM_K_INT, B(gpu), "0", 0, 1e7, NULL, "GPU in the cluster (node * gpus_per_node + local index)"},
	{"direction", LSIM_K_ENUM, B(direction), "h2d", LSIM_NOBOUNDS, "h2d|d2h", "host to device or device to host"},
	{"block", LSIM_K_BYTES, B(block), "4MiB", 1, 1e13, NULL, "bytes of one copy"},
	{"count", LSIM_K_INT, B(count), "1", 0, 1e9, NULL, "copies per stream, one after another"},
	{"streams", LSIM_K_INT, B(streams), "1", 0, 1e4, NULL, "concurrent streams (host threads)"},
	{"gap", LSIM_K_TIME, B(gap), "0s", 0, 1e13, NULL, "pause before each copy"},
	{"staging_bw", LSIM_K_BW, B(staging_bw), "0", 0, 1e13, NULL, "host-side staging before each copy (pageable memory): block/staging_bw more pause (0: none)"},
	{"start", LSIM_K_TIME, B(start), "0s", 0, 9e18, NULL, "when the streams begin"},
	{"priority", LSIM_K_ENUM, B(priority), "normal", LSIM_NOBOUNDS, "high|normal|low", "strict priority of the copies on the links (levels 0, 1, 2; every other flow is normal unless network.link_classes says otherwise)"},
	{"weight", LSIM_K_DOUBLE, B(weight), "1", 1e-6, 1e6, NULL, "weight of the copies among the flows of their priority (weighted max-min; others weigh 1)"},
	{"rate", LSIM_K_BW, B(rate), "0", 0, 1e13, NULL, "token bucket: all the entry's copies together limited to this rate once burst is spent (absent: no limit)"},
	{"burst", LSIM_K_BYTES, B(burst), "0", 0, 1e15, NULL, "token bucket depth: bytes the copies may move above rate (full at the start; 0: a pure rate limit)"},
};
#undef B

#define LC(f) offsetof(struct lc_cfg, f)
static const struct lsim_keydef lc_keys[] = {
	{"kind", LSIM_K_ENUM, LC(kind), NULL, LSIM_NOBOUNDS, "inference|kv|weights|collective|checkpoint|background|lora", "the flows of this class: inference (inputs and outputs), kv (swap, KV transfer), weights (cold start), collective (all-reduce, pipeline sends), checkpoint, background, lora (LoRA adapters copied to GPU slots)"},
	{"priority", LSIM_K_ENUM, LC(priority), "normal", LSIM_NOBOUNDS, "high|normal|low", "strict priority on the links: a more urgent level's flows are served first on every link they cross"},
	{"weight", LSIM_K_DOUBLE, LC(weight), "1", 1e-6, 1e6, NULL, "weight among the flows of the same priority (weighted max-min)"},
	{"rate", LSIM_K_BW, LC(rate), "0", 0, 1e13, NULL, "token bucket: the kind's flows together limited to this rate once burst is spent (absent: no limit)"},
	{"burst", LSIM_K_BYTES, LC(burst), "0", 0, 1e15, NULL, "token bucket depth in bytes (full at the start; 0: a pure rate limit)"},
	{"tenant", LSIM_K_STRING, LC(tenant), "", LSIM_NOBOUNDS, NULL, "kind inference or kv: only the flows made for this tenant's requests (its workload.tenant_column value, or its trace's position 0, 1, ... in workload.traces); they take this class rather than the kind's (empty: every tenant)"},
};
#undef LC

static const struct lsim_keydef output_keys[] = {
	{"sample_period", LSIM_K_TIME, offsetof(struct output_cfg, sample_period), "1s", 0, 1e13, NULL, "time-series sampling period (0: off)"},
	{"timeseries_rows", LSIM_K_INT, offsetof(struct output_cfg, timeseries_rows), "1000000", 0, 1e15, NULL, "the most rows each stored time series (/timeseries, /link_timeseries, /job_timeseries) keeps: past it the recorded period doubles and pairs of periods merge (docs/output.md; 0: no cap)"},
	{"records_in_memory", LSIM_K_INT, offsetof(struct output_cfg, records_in_memory), "262144", 1, 1e9, NULL, "request records held in memory; beyond this they go to a temporary file (long runs)"},
};

char *lsim_scn_resolve(const struct lsim_scenario *sc, const char *p)
{
	if (!p || !*p)
		return strdup("");
	if (p[0] == '/')
		return strdup(p);
	size_t n = strlen(sc->dir) + strlen(p) + 2;
	char *out = malloc(n);
	if (out)
		snprintf(out, n, "%s/%s", sc->dir, p);
	return out;
}

/*
 * The names written in a list (cluster node groups, instance groups,
 * classes, workload.models): each at most once, since the report, the
 * labels of a trace and the per-class tables look entries up by name, and
 * a second entry of the same name would be silently shadowed or merged.
 * A class name is kept whole in the report, so at most 31 characters.
 */
static int unique_names(struct lsim_scenario *sc, const struct lsim_node *list,
			const char *key, struct lsim_diag *d)
{
	for (size_t i = 0; i < list->n; i++) {
		const struct lsim_node *a = lsim_node_get(list->items[i], "name");
		if (!a || a->kind != LSIM_NODE_SCALAR)
			continue;
		char path[80];
		snprintf(path, sizeof path, "%s[%zu].name", key, i);
		size_t max = sizeof((struct lsim_class_record *)NULL)->name - 1;
		if (strcmp(key, "classes") == 0 && strlen(a->value) > max)
			return lsim_cfg_error(d, sc->doc, a, path, LSIM_EINVAL,
					      "class name '%s' is %zu characters long; the "
					      "report keeps at most %zu: write a shorter name",
					      a->value, strlen(a->value), max);
		for (size_t j = 0; j < i; j++) {
			const struct lsim_node *b = lsim_node_get(list->items[j], "name");
			if (b && b->kind == LSIM_NODE_SCALAR && strcmp(a->value, b->value) == 0)
				return lsim_cfg_error(d, sc->doc, a, path, LSIM_EINVAL,
						      "name '%s' is given twice in %s: line %d "
						      "(%s[%zu]) and line %d; give each a "
						      "different name",
						      a->value, key, b->line, key, j, a->line);
		}
	}
	return 0;
}

/* Binds the list parent.key (path: its name in messages; parent NULL: the
 * root) into an array of elem-sized entries. */
int lsim_scn_bind_list_in(struct lsim_scenario *sc, const struct lsim_node *parent,
			  const char *key, const char *path_name,
			  const struct lsim_keydef *keys, size_t nkeys, void **out,
			  size_t *n_out, size_t elem, bool required,
			  struct lsim_diag *d)
{
	struct lsim_node *list = lsim_node_get(parent ? parent : sc->doc->root, key);
	key = path_name;
	if (!list) {
		if (required)
			return lsim_cfg_error(d, sc->doc, sc->doc->root, key,
					      LSIM_EINVAL, "missing required section");
		return 0;
	}
	if (list->kind != LSIM_NODE_SEQ)
		return lsim_cfg_error(d, sc->doc, list, key, LSIM_EINVAL,
				      "expected a list (entries starting with '-')");
	if (required && list->n == 0)
		return lsim_cfg_error(d, sc->doc, list, key, LSIM_EINVAL,
				      "the list is empty");
	char *arr = calloc(list->n ? list->n : 1, elem);
	if (!arr)
		return LSIM_ENOMEM;
	*out = arr;
	*n_out = list->n;
	for (size_t i = 0; i < list->n; i++) {
		char path[64];
		snprintf(path, sizeof path, "%s[%zu]", key, i);
		int rc = lsim_cfg_bind(sc->doc, list->items[i], path, keys, nkeys,
				       NULL, arr + i * elem, d);
		if (rc != 0)
			return rc;
	}
	return unique_names(sc, list, key, d);
}

static int bind_list(struct lsim_scenario *sc, const char *key,
		     const struct lsim_keydef *keys, size_t nkeys,
		     void **out, size_t *n_out, size_t elem, bool required,
		     struct lsim_diag *d)
{
	return lsim_scn_bind_list_in(sc, NULL, key, key, keys, nkeys, out, n_out, elem,
				     required, d);
}

int lsim_scn_bind_section(struct lsim_scenario *sc, const struct lsim_node *parent,
			  const char *key, const char *path,
			  const struct lsim_keydef *keys, size_t nkeys,
			  const char *const *also, void *obj, struct lsim_diag *d)
{
	return lsim_cfg_bind(sc->doc, lsim_node_get(parent, key), path, keys,
			     nkeys, also, obj, d);
}

/*
 * A key that only one choice of a selector uses (lognormal's mean, mmpp's
 * rate_on) is an error when written beside another choice: a length of
 * `dist: fixed, mean: 500` would otherwise silently be the default 128.
 * choices: the selector's choice names, '|'-separated, in enum order;
 * each used[k] is the '|'-separated choices key k applies to.
 */
struct used_by {
	const char *key, *choices;
};

static int check_used(const struct lsim_scenario *sc, const struct lsim_node *sec,
		      const char *path, const char *selector, const char *choices,
		      int chosen, const struct used_by *used, size_t n, struct lsim_diag *d)
{
	char name[64];
	if (!lsim_choice_name(choices, chosen, name, sizeof name))
		snprintf(name, sizeof name, "?");
	for (size_t i = 0; i < n; i++) {
		const struct lsim_node *node = lsim_node_get(sec, used[i].key);
		if (!node || lsim_choice_index(used[i].choices, name) >= 0)
			continue;
		char key[160];
		snprintf(key, sizeof key, "%s.%s", path, used[i].key);
		return lsim_cfg_error(d, sc->doc, node, key, LSIM_EINVAL,
				      "used only with %s: %s, not %s: %s", selector,
				      used[i].choices, selector, name);
	}
	return 0;
}

static int bind_lengths(struct lsim_scenario *sc, int which,
			struct lsim_diag *d)
{
	static const struct used_by len_used[] = {
		{"value", "fixed"},	{"low", "uniform"},    {"high", "uniform"},
		{"mean", "lognormal"},	{"stddev", "lognormal"}, {"exponent", "zipf"},
	};
	static const char *const names[2] = {"prompt", "output"};
	static const char *const paths[2] = {"workload.prompt", "workload.output"};
	struct lsim_node *wl = lsim_node_get(sc->doc->root, "workload");
	struct lsim_node *sec = lsim_node_get(wl, names[which]);
	int rc = lsim_cfg_bind(sc->doc, sec, paths[which], len_keys,
			       N_OF(len_keys), len_sections, &sc->len[which], d);
	if (rc == 0)
		rc = check_used(sc, sec, paths[which], "dist", len_keys[0].choices,
				sc->len[which].dist, len_used, N_OF(len_used), d);
	if (rc != 0)
		return rc;
	struct len_cfg *l = &sc->len[which];
	struct lsim_node *vals = lsim_node_get(sec, "values");
	if (l->dist == LSIM_LEN_EMPIRICAL) {
		if (!vals || vals->kind != LSIM_NODE_SEQ || vals->n == 0)
			return lsim_cfg_error(d, sc->doc, vals ? vals : sec,
					      paths[which], LSIM_EINVAL,
					      "empirical needs a non-empty list 'values'");
		sc->len_values[which] = calloc(vals->n, sizeof(int32_t));
		if (!sc->len_values[which])
			return LSIM_ENOMEM;
		for (size_t i = 0; i < vals->n; i++) {
			double v;
			struct lsim_node *it = vals->items[i];
			if (it->kind != LSIM_NODE_SCALAR ||
			    lsim_units_parse(LSIM_K_INT, it->value, &v, NULL) != 0 ||
			    v < 1 || v > 1e8)
				return lsim_cfg_error(d, sc->doc, it, paths[which],
						      LSIM_EINVAL,
						      "values must be integers in [1, 1e8]");
			sc->len_values[which][i] = (int32_t)v;
		}
		sc->n_len_values[which] = vals->n;
	} else if (vals) {
		return lsim_cfg_error(d, sc->doc, vals, paths[which], LSIM_EINVAL,
				      "'values' is only used by dist: empirical");
	}
	if (l->dist == LSIM_LEN_UNIFORM && l->low > l->high)
		return lsim_cfg_error(d, sc->doc, sec, paths[which], LSIM_EINVAL,
				      "low must not exceed high");
	return 0;
}

/* The configuration as YAML into b: the effective configuration, or
 * (for_id) the same with the paths of the files the run reads left
 * empty: the run id hashes their contents instead (lsim_scn_compute_run_id). */
void lsim_scn_dump_config(const struct lsim_scenario *sc, struct lsim_buf *b, bool for_id)
{
	struct top_cfg top = sc->top;
	struct wl_cfg wl = sc->wl;
	struct power_cfg power = sc->power;
	struct fail_cfg fail = sc->fail;
	struct job_cfg jobs = sc->jobs;
	if (for_id) {
		top.data_dir = "";
		wl.path = wl.lengths_from = "";
		power.carbon_trace = power.prices = "";
		fail.trace = "";
		jobs.path = "";
	}
	/* the serverless keys at their defaults are echoed only by the
	 * scenarios that use serverless serving: the others keep their run id */
	bool serverless = lsim_scn_uses_serverless(sc);
	lsim_cfg_dump(b, 0, top_keys, N_OF(top_keys), &top);
	lsim_buf_printf(b, "cluster:\n");
	for (size_t i = 0; i < sc->n_nodes; i++) {
		lsim_buf_printf(b, "  -\n");
		lsim_cfg_dump_opt(b, 4, node_keys, N_OF(node_keys), &sc->nodes[i],
				  serverless ? NULL : lsim_scn_serverless_node_keys);
	}
	lsim_buf_printf(b, "instances:\n");
	for (size_t i = 0; i < sc->n_insts; i++) {
		struct inst_cfg ic = sc->insts[i];
		if (for_id)
			ic.perf_table = "";
		lsim_buf_printf(b, "  -\n");
		/* keys added later stay out of the echo (and the run id) of
		 * the configurations that leave them at their defaults */
		static const char *const io_keys[] = {"io_in_bytes", "io_out_bytes",
							"kv_offload", "kv_offload_space",
							"cpu_offload_gb", "enable_lora",
							"max_loras", "max_lora_rank",
							"max_cpu_loras", NULL};
		static const char *const io_serverless_keys[] = {
			"io_in_bytes", "io_out_bytes", "kv_offload", "kv_offload_space",
			"cpu_offload_gb", "enable_lora", "max_loras", "max_lora_rank",
			"max_cpu_loras", "serverless", "keep_alive", NULL};
		lsim_cfg_dump_opt(b, 4, inst_keys,
				  N_OF(inst_keys) - (lsim_scn_shared(&ic) ? 0 : LSIM_SCN_SHARE_KEYS),
				  &ic, serverless ? io_keys : io_serverless_keys);
	}
	/* the policies, each under its key ("scheduler.router" nests) */
	static const enum lsim_policy_role order[] = {
		LSIM_ROLE_ROUTER, LSIM_ROLE_QUEUE, LSIM_ROLE_PROFILER,
		LSIM_ROLE_ALLOCATOR, LSIM_ROLE_MONITOR, LSIM_ROLE_ADAPTOR,
		LSIM_ROLE_SYNCHRONIZER, LSIM_ROLE_QOS,
	};
	for (size_t i = 0; i < N_OF(order); i++) {
		const char *key = lsim_policy_role_key(order[i]);
		const char *dot = strchr(key, '.');
		if (order[i] == LSIM_ROLE_ROUTER)
			lsim_buf_printf(b, "scheduler:\n");
		lsim_buf_printf(b, "%s%s:\n", dot ? "  " : "", dot ? dot + 1 : key);
		lsim_policy_dump(b, dot ? 4 : 2, sc->policies[order[i]]);
	}
	lsim_buf_printf(b, "classes:\n");
	for (size_t i = 0; i < sc->n_classes; i++) {
		lsim_buf_printf(b, "  -\n");
		lsim_cfg_dump(b, 4, class_keys, N_OF(class_keys), &sc->classes[i]);
	}
	lsim_buf_printf(b, "workload:\n");
	/* lora_column came later: out of the echo (and the run id) unless set */
	static const char *const wl_optional[] = {"lora_column", NULL};
	lsim_cfg_dump_opt(b, 2, wl_keys, N_OF(wl_keys), &wl, wl_optional);
	if (sc->n_traces > 0 && !for_id) {
		lsim_buf_printf(b, "  traces:\n");
		for (size_t i = 0; i < sc->n_traces; i++)
			lsim_buf_printf(b, "    - \"%s\"\n", sc->traces[i]);
	}
	if (sc->n_model_shares > 0) {
		lsim_buf_printf(b, "  models:\n");
		for (size_t i = 0; i < sc->n_model_shares; i++) {
			lsim_buf_printf(b, "    -\n");
			lsim_cfg_dump(b, 6, lsim_scn_model_share_keys, lsim_scn_n_model_share_keys,
				      &sc->model_shares[i]);
		}
	}
	if (sc->lora_wl.adapters > 0) { /* echoed only where used */
		lsim_buf_printf(b, "  lora:\n");
		lsim_cfg_dump(b, 4, lora_wl_keys, N_OF(lora_wl_keys), &sc->lora_wl);
	} else if (sc->wl.lora_column[0]) { /* the trace names them: rank only */
		lsim_buf_printf(b, "  lora:\n    rank: %lld\n", (long long)sc->lora_wl.rank);
	}
	static const char *const names[2] = {"prompt", "output"};
	for (int w = 0; w < 2; w++) {
		lsim_buf_printf(b, "  %s:\n", names[w]);
		lsim_cfg_dump(b, 4, len_keys, N_OF(len_keys), &sc->len[w]);
		if (sc->n_len_values[w]) {
			lsim_buf_printf(b, "    values: [");
			for (size_t i = 0; i < sc->n_len_values[w]; i++)
				lsim_buf_printf(b, "%s%d", i ? ", " : "",
						sc->len_values[w][i]);
			lsim_buf_printf(b, "]\n");
		}
	}
	lsim_buf_printf(b, "power:\n");
	lsim_cfg_dump(b, 2, power_keys, N_OF(power_keys), &power);
	lsim_buf_printf(b, "output:\n");
	lsim_cfg_dump_opt(b, 2, output_keys, N_OF(output_keys), &sc->output,
			  (const char *const[]){"timeseries_rows", NULL});
	lsim_buf_printf(b, "network:\n");
	lsim_cfg_dump(b, 2, net_keys, N_OF(net_keys), &sc->net);
	for (size_t i = 0; i < sc->n_lc; i++) {
		lsim_buf_printf(b, i ? "    -\n" : "  link_classes:\n    -\n");
		lsim_cfg_dump_opt(b, 6, lc_keys, N_OF(lc_keys), &sc->lc[i],
				  (const char *const[]){"tenant", NULL});
	}
	lsim_buf_printf(b, "failures:\n");
	lsim_cfg_dump(b, 2, fail_keys, N_OF(fail_keys), &fail);
	if (sc->have_jobs) {
		lsim_buf_printf(b, "jobs:\n");
		lsim_cfg_dump(b, 2, lsim_scn_job_keys, lsim_scn_n_job_keys, &jobs);
	}
	if (sc->n_bg > 0)
		lsim_buf_printf(b, "background:\n");
	for (size_t i = 0; i < sc->n_bg; i++) {
		lsim_buf_printf(b, "  -\n");
		lsim_cfg_dump_opt(b, 4, bg_keys, N_OF(bg_keys), &sc->bg[i],
				  (const char *const[]){"priority", "weight", "rate", "burst", NULL});
	}
}

static const char *const net_also[] = {"link_classes", NULL};

/* A rate written as 0 would stop the flows: refused, naming what to write.
 * rate: entry 0's rate; the entries are elem bytes apart. */
static int refuse_zero_rate(const struct lsim_scenario *sc, const struct lsim_node *list,
			    const char *path, const double *rate, size_t elem,
			    struct lsim_diag *d)
{
	for (size_t i = 0; list && list->kind == LSIM_NODE_SEQ && i < list->n; i++) {
		const struct lsim_node *r = lsim_node_get(list->items[i], "rate");
		double v;
		memcpy(&v, (const char *)rate + i * elem, sizeof v);
		if (!r || v > 0)
			continue;
		char key[64];
		snprintf(key, sizeof key, "%s[%zu].rate", path, i);
		return lsim_cfg_error(d, sc->doc, r, key, LSIM_EINVAL,
				      "a rate of 0 would stop the flows: give a positive "
				      "rate (e.g. 1GB/s), or leave rate out for no limit");
	}
	return 0;
}

/*
 * workload.lora_column names each request's adapter in the trace, so the
 * generator's drawing keys (adapters, popularity, share) would be unused
 * or contradict it: refused, as is the column without a trace to read.
 * The adapters' rank stays workload.lora.rank (default 16).
 */
static int check_lora_column(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (!sc->wl.lora_column[0])
		return 0;
	struct lsim_node *wl = lsim_node_get(sc->doc->root, "workload");
	struct lsim_node *lora = lsim_node_get(wl, "lora");
	if (sc->wl.kind == WL_GENERATOR)
		return lsim_cfg_error(d, sc->doc, lsim_node_get(wl, "lora_column"),
				      "workload.lora_column", LSIM_EINVAL,
				      "lora_column names a trace column, but kind is generator: "
				      "set kind: csv, jsonl or auto, or draw adapters with "
				      "workload.lora.adapters");
	if (sc->lora_wl.adapters > 0)
		return lsim_cfg_error(d, sc->doc, lsim_node_get(lora, "adapters"),
				      "workload.lora.adapters", LSIM_EINVAL,
				      "the trace's lora_column names each request's adapter; "
				      "adapters draws them instead: keep one (drop adapters, "
				      "or drop lora_column)");
	if (sc->lora_wl.popularity != 0 || sc->lora_wl.share != 1)
		return lsim_cfg_error(d, sc->doc,
				      lsim_node_get(lora, sc->lora_wl.popularity != 0 ? "popularity"
										    : "share"),
				      sc->lora_wl.popularity != 0 ? "workload.lora.popularity"
								  : "workload.lora.share",
				      LSIM_EINVAL,
				      "the trace's lora_column names each request's adapter "
				      "(an empty value: the base model), so nothing is drawn: "
				      "drop %s, or drop lora_column",
				      sc->lora_wl.popularity != 0 ? "popularity" : "share");
	return 0;
}

/* network.link_classes[]: one entry per kind, a positive rate if any. */
static int check_link_classes(struct lsim_scenario *sc, const struct lsim_node *root,
			      struct lsim_diag *d)
{
	const struct lsim_node *list = lsim_node_get(lsim_node_get(root, "network"), "link_classes");
	int rc = sc->n_lc ? refuse_zero_rate(sc, list, "network.link_classes", &sc->lc[0].rate,
					     sizeof *sc->lc, d)
			  : 0;
	for (size_t i = 0; rc == 0 && i < sc->n_lc; i++) {
		const struct lc_cfg *c = &sc->lc[i];
		char key[64];
		if (c->tenant[0]) {
			const struct lsim_node *t = lsim_node_get(list->items[i], "tenant");
			snprintf(key, sizeof key, "network.link_classes[%zu].tenant", i);
			if (c->kind != LSIM_FLOW_INFERENCE && c->kind != LSIM_FLOW_KV)
				return lsim_cfg_error(d, sc->doc, t, key, LSIM_EINVAL,
						      "%s flows are not made for a request: a tenant's "
						      "class is for kind inference or kv (leave tenant out)",
						      lsim_flow_kind_name((enum lsim_flow_kind)c->kind));
			if (!sc->wl.tenant_column[0]) {
				size_t n = sc->n_traces ? sc->n_traces : 1;
				char *end;
				unsigned long v = strtoul(c->tenant, &end, 10);
				if (*end || c->tenant[0] < '0' || c->tenant[0] > '9' || v >= n)
					return lsim_cfg_error(d, sc->doc, t, key, LSIM_EINVAL,
							      "'%s' is not a tenant: without workload.tenant_column "
							      "a tenant is its trace's position, 0 to %zu",
							      c->tenant, n - 1);
			}
		}
		for (size_t j = 0; j < i; j++)
			if (sc->lc[j].kind == c->kind && strcmp(sc->lc[j].tenant, c->tenant) == 0) {
				snprintf(key, sizeof key, "network.link_classes[%zu].kind", i);
				return lsim_cfg_error(d, sc->doc, list->items[i], key, LSIM_EINVAL,
						      "%s%s%s already has a class (entry %zu): one entry per kind "
						      "and tenant",
						      lsim_flow_kind_name((enum lsim_flow_kind)c->kind),
						      c->tenant[0] ? " of tenant " : "", c->tenant, j);
			}
	}
	return rc;
}

static int check_classes(struct lsim_scenario *sc, struct lsim_diag *d)
{
	double sum = 0;
	for (size_t i = 0; i < sc->n_classes; i++)
		sum += sc->classes[i].share;
	if (sc->n_classes > 0 && (sum < 0.999999 || sum > 1.000001))
		return lsim_cfg_error(d, sc->doc, lsim_node_get(sc->doc->root, "classes"),
				      "classes", LSIM_EINVAL,
				      "the shares add up to %g, not 1", sum);
	return 0;
}

static void destroy_policies(struct lsim_scenario *sc)
{
	for (int i = 0; i < LSIM_ROLE_COUNT; i++) {
		lsim_policy_destroy(sc->policies[i]);
		sc->policies[i] = NULL;
	}
}

/* Creates fresh policy instances (each run starts from a clean state). */
static int make_policies(struct lsim_scenario *sc, struct lsim_diag *d)
{
	destroy_policies(sc);
	struct lsim_node *sched = lsim_node_get(sc->doc->root, "scheduler");
	const struct lsim_node *nodes[LSIM_ROLE_COUNT] = {
		lsim_node_get(sched, "router"), lsim_node_get(sched, "queue"),
		lsim_node_get(sc->doc->root, "profiler"),
		lsim_node_get(sc->doc->root, "allocator"),
		lsim_node_get(sc->doc->root, "qos"),
		lsim_node_get(sc->doc->root, "monitor"),
		lsim_node_get(sc->doc->root, "adaptor"),
		lsim_node_get(sc->doc->root, "synchronizer"),
	};
	static const char *const defaults[LSIM_ROLE_COUNT] = {
		"round_robin", "fcfs", "mean", "first_fit", "none", "periodic",
		"static", "none",
	};
	/* instances there may ever be: every group at its maximum */
	int32_t n = 0;
	for (size_t i = 0; i < sc->n_insts; i++)
		n += (int32_t)(lsim_scn_max_replicas(&sc->insts[i]) * sc->insts[i].dp);
	for (int i = 0; i < LSIM_ROLE_COUNT; i++) {
		int rc = lsim_policy_create(sc->doc, nodes[i],
					    lsim_policy_role_key((enum lsim_policy_role)i),
					    (enum lsim_policy_role)i, defaults[i],
					    sc->dir, (uint64_t)sc->top.seed, n,
					    (int32_t)sc->n_classes, (int32_t)sc->n_insts,
					    &sc->policies[i], d);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int lsim_scenario_load(const char *path, const char *const *overrides,
		       size_t n_overrides, struct lsim_scenario **out,
		       struct lsim_diag *d)
{
	struct lsim_scenario *sc = calloc(1, sizeof *sc);
	if (!sc)
		return lsim_diag_ensure(d, LSIM_ENOMEM);
	int rc = lsim_doc_load_file(path, &sc->doc, d);
	char *tmp = strdup(path);
	if (rc == 0 && !tmp)
		rc = LSIM_ENOMEM;
	if (rc == 0) {
		sc->dir = strdup(dirname(tmp));
		if (!sc->dir)
			rc = LSIM_ENOMEM;
	}
	free(tmp);
	/* the policy keys are choices by name: --set adaptor=threshold
	 * switches the policy and drops the old one's parameters */
	const char *choices[LSIM_ROLE_COUNT + 1] = {NULL};
	for (int r = 0; r < LSIM_ROLE_COUNT; r++)
		choices[r] = lsim_policy_role_key((enum lsim_policy_role)r);
	for (size_t i = 0; rc == 0 && i < n_overrides; i++)
		rc = lsim_doc_set_choices(sc->doc, overrides[i], choices, d);
	struct lsim_node *root = rc == 0 ? sc->doc->root : NULL;
	if (rc == 0)
		rc = lsim_cfg_bind(sc->doc, root, "", top_keys, N_OF(top_keys),
				   top_sections, &sc->top, d);
	if (rc == 0)
		rc = bind_list(sc, "cluster", node_keys, N_OF(node_keys),
			       (void **)&sc->nodes, &sc->n_nodes, sizeof *sc->nodes,
			       false, d);
	if (rc == 0)
		rc = bind_list(sc, "instances", inst_keys, N_OF(inst_keys),
			       (void **)&sc->insts, &sc->n_insts, sizeof *sc->insts,
			       !lsim_node_get(root, "jobs"), d);
	if (rc == 0)
		rc = bind_list(sc, "classes", class_keys, N_OF(class_keys),
			       (void **)&sc->classes, &sc->n_classes,
			       sizeof *sc->classes, false, d);
	if (rc == 0)
		rc = check_classes(sc, d);
	if (rc == 0)
		rc = lsim_cfg_bind(sc->doc, lsim_node_get(root, "scheduler"),
				   "scheduler", NULL, 0, scheduler_sections, NULL, d);
	if (rc == 0)
		rc = make_policies(sc, d);
	if (rc == 0)
		rc = lsim_scn_bind_section(sc, root, "workload", "workload", wl_keys,
					   N_OF(wl_keys), wl_sections, &sc->wl, d);
	if (rc == 0 && sc->wl.kind == WL_GENERATOR) {
		static const struct used_by arrival_used[] = {
			{"cv", "gamma|weibull"},     {"rate_on", "mmpp"},
			{"rate_off", "mmpp"},	     {"mean_on", "mmpp"},
			{"mean_off", "mmpp"},	     {"amplitude", "diurnal"},
			{"period", "diurnal"},	     {"spike_every", "spikes"},
			{"spike_length", "spikes"},  {"spike_factor", "spikes"},
		};
		rc = check_used(sc, lsim_node_get(root, "workload"), "workload", "arrival",
				wl_keys[1].choices, sc->wl.arrival, arrival_used,
				N_OF(arrival_used), d);
	}
	if (rc == 0)
		rc = lsim_scn_bind_section(sc, lsim_node_get(root, "workload"), "lora",
					   "workload.lora", lora_wl_keys, N_OF(lora_wl_keys),
					   NULL, &sc->lora_wl, d);
	if (rc == 0 && sc->lora_wl.popularity == 0 &&
	    lsim_node_get(lsim_node_get(lsim_node_get(root, "workload"), "lora"), "alpha"))
		rc = lsim_cfg_error(d, sc->doc,
				    lsim_node_get(lsim_node_get(lsim_node_get(root, "workload"),
								"lora"), "alpha"),
				    "workload.lora.alpha", LSIM_EINVAL,
				    "alpha is zipf's exponent, unused with popularity: uniform; "
				    "write popularity: zipf or drop alpha");
	if (rc == 0)
		rc = check_lora_column(sc, d);
	if (rc == 0)
		rc = lsim_scn_check_jsonl_mapping(sc, d);
	if (rc == 0)
		rc = lsim_scn_bind_traces(sc, d);
	if (rc == 0)
		rc = lsim_scn_build_models(sc, d);
	if (rc == 0 && sc->wl.class_column[0] && sc->n_classes == 0)
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(root, "workload"),
				    "workload.class_column", LSIM_EINVAL,
				    "class_column names classes, but the scenario defines none");
	if (rc == 0)
		rc = lsim_scn_load_pairs(sc, d);
	if (rc == 0)
		rc = bind_lengths(sc, 0, d);
	if (rc == 0)
		rc = bind_lengths(sc, 1, d);
	if (rc == 0)
		rc = lsim_scn_bind_section(sc, root, "power", "power", power_keys,
					   N_OF(power_keys), NULL, &sc->power, d);
	if (rc == 0)
		rc = lsim_scn_bind_section(sc, root, "output", "output", output_keys,
					   N_OF(output_keys), NULL, &sc->output, d);
	if (rc == 0)
		rc = lsim_scn_bind_section(sc, root, "network", "network", net_keys,
					   N_OF(net_keys), net_also, &sc->net, d);
	if (rc == 0)
		rc = lsim_scn_bind_list_in(sc, lsim_node_get(root, "network"), "link_classes",
					   "network.link_classes", lc_keys, N_OF(lc_keys),
					   (void **)&sc->lc, &sc->n_lc, sizeof *sc->lc, false, d);
	if (rc == 0)
		rc = check_link_classes(sc, root, d);
	if (rc == 0)
		rc = lsim_scn_bind_section(sc, root, "failures", "failures", fail_keys,
					   N_OF(fail_keys), NULL, &sc->fail, d);
	if (rc == 0 && sc->fail.trace[0])
		rc = lsim_scn_load_failure_trace(sc, d);
	if (rc == 0)
		rc = lsim_scn_load_costs(sc, d);
	if (rc == 0 && lsim_node_get(root, "jobs"))
		rc = lsim_scn_load_jobs(sc, d);
	if (rc == 0)
		rc = bind_list(sc, "background", bg_keys, N_OF(bg_keys),
			       (void **)&sc->bg, &sc->n_bg, sizeof *sc->bg, false, d);
	if (rc == 0)
		rc = sc->n_bg ? refuse_zero_rate(sc, lsim_node_get(root, "background"), "background",
						 &sc->bg[0].rate, sizeof *sc->bg, d)
			      : 0;
	if (rc == 0 && sc->n_bg > 0 && !lsim_node_get(root, "cluster"))
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(root, "background"),
				    "background", LSIM_EINVAL,
				    "background copies move over the cluster's links: "
				    "they need a cluster section");
	if (rc == 0)
		rc = lsim_scn_check_serverless(sc, root, d);
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		if (lsim_scn_min_replicas(ic) <= ic->replicas &&
		    ic->replicas <= lsim_scn_max_replicas(ic))
			continue;
		char key[64];
		snprintf(key, sizeof key, "instances[%zu].replicas", i);
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(root, "instances")->items[i],
				    key, LSIM_ERANGE,
				    "replicas %lld must lie within min_replicas %lld and "
				    "max_replicas %lld", (long long)ic->replicas,
				    (long long)lsim_scn_min_replicas(ic),
				    (long long)lsim_scn_max_replicas(ic));
	}
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++)
		if (sc->insts[i].eng.pp > 1 && sc->insts[i].perf == PERF_SERVICE) {
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].pp", i);
			rc = lsim_cfg_error(d, sc->doc,
					    lsim_node_get(root, "instances")->items[i], key,
					    LSIM_EINVAL,
					    "pipeline stages need a model's layers: perf roofline "
					    "or table, not service");
		}
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++)
		if ((sc->insts[i].cold_start || sc->insts[i].role != LSIM_ROLE_BOTH ||
		     sc->insts[i].eng.preemption_mode == LSIM_PREEMPT_SWAP) &&
		    (!lsim_node_get(root, "cluster") || sc->insts[i].perf == PERF_SERVICE)) {
			const struct inst_cfg *ic = &sc->insts[i];
			const char *what = ic->cold_start ? "cold_start"
					   : ic->role != LSIM_ROLE_BOTH ? "role"
									: "preemption_mode";
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].%s", i, what);
			rc = lsim_cfg_error(d, sc->doc,
					    lsim_node_get(root, "instances")->items[i], key,
					    LSIM_EINVAL,
					    "%s moves %s over the cluster's links: it needs a "
					    "cluster section and a model (not perf: service)",
					    ic->cold_start ? "a cold start"
					    : ic->role != LSIM_ROLE_BOTH ? "disaggregation"
									 : "swapping",
					    ic->cold_start ? "weights" : "KV blocks");
		}
	if (rc == 0 && sc->wl.kind != WL_GENERATOR && !sc->wl.path[0] &&
	    !lsim_node_get(lsim_node_get(root, "workload"), "traces"))
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(root, "workload"),
				    "workload.path", LSIM_EINVAL,
				    "a trace workload needs a path");
	if (rc == 0 && sc->wl.kind == WL_GENERATOR &&
	    (sc->wl.window_start > 0 || sc->wl.window_end > 0 ||
	     sc->wl.time_scale != 1.0 || sc->wl.keep < 1.0 || sc->wl.repeat > 1 ||
	     sc->wl.rate_scale != 1.0))
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(root, "workload"),
				    "workload.kind", LSIM_EINVAL,
				    "window_start, window_end, time_scale, keep, rate_scale and "
				    "repeat shape a trace; a generator takes rate, count and "
				    "duration instead");
	/* a generator whose requests would outlast the clock (rate 1e-9 with
	 * 1000 requests: 10^12 s) ran until memory ran out */
	if (rc == 0 && sc->wl.kind == WL_GENERATOR && sc->wl.count > 0 && sc->wl.rate > 0 &&
	    (double)sc->wl.count / sc->wl.rate > 9.0e9)
		rc = lsim_cfg_error(d, sc->doc,
				    lsim_node_get(lsim_node_get(root, "workload"), "rate"),
				    "workload.rate", LSIM_ERANGE,
				    "%g requests at %g/s span about %.3g s, beyond the simulated "
				    "clock's 9.2e9 s; raise the rate to at least %.3g or lower count",
				    (double)sc->wl.count, sc->wl.rate,
				    (double)sc->wl.count / sc->wl.rate, (double)sc->wl.count / 9.0e9);
	/* the time series' bound (LSIM_MAX_SAMPLES), where the horizon is
	 * known before the run: its duration, or the generator's */
	lsim_time horizon = sc->top.duration > 0 ? sc->top.duration
			    : sc->wl.kind == WL_GENERATOR ? sc->wl.duration : 0;
	if (rc == 0 && sc->output.sample_period > 0 && horizon > 0 &&
	    (double)horizon / (double)sc->output.sample_period > (double)LSIM_MAX_SAMPLES)
		rc = lsim_cfg_error(d, sc->doc,
				    lsim_node_get(lsim_node_get(root, "output"), "sample_period"),
				    "output.sample_period", LSIM_ERANGE,
				    "%.9gs over the run's %.9g s gives %.3g samples, more than "
				    "the %u a run may take (docs/output.md); raise it to at "
				    "least %.9gs, or set 0 for no time series",
				    lsim_time_to_s(sc->output.sample_period),
				    lsim_time_to_s(horizon),
				    (double)horizon / (double)sc->output.sample_period,
				    LSIM_MAX_SAMPLES,
				    ceil(lsim_time_to_s(horizon) / LSIM_MAX_SAMPLES * 1e9) / 1e9);
	if (rc == 0 && sc->wl.kind == WL_GENERATOR && sc->wl.count == 0 &&
	    sc->wl.duration == 0)
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(root, "workload"),
				    "workload.count", LSIM_EINVAL,
				    "set count or duration, or the workload never ends");
	if (rc == 0)
		rc = lsim_scn_load_hw(sc, d);
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++)
		rc = lsim_scn_check_dp(sc, root, i, d);
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++)
		rc = lsim_scn_check_node(sc, root, i, d);
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++)
		rc = lsim_scn_check_cpu_offload(sc, root, i, d);
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++)
		rc = lsim_scn_check_lora(sc, root, i, d);
	if (rc == 0 && sc->wl.lora_column[0]) {
		/* the groups a request naming an adapter must not reach */
		sc->lora_refused = malloc((sc->n_models + 1) * sizeof *sc->lora_refused);
		if (!sc->lora_refused)
			rc = LSIM_ENOMEM;
		for (size_t m = 0; rc == 0 && m <= sc->n_models; m++)
			sc->lora_refused[m] = -1;
		for (size_t i = 0; rc == 0 && i < sc->n_insts; i++) {
			if (sc->insts[i].eng.enable_lora || sc->insts[i].perf == PERF_SERVICE)
				continue;
			int32_t *first[2] = {&sc->lora_refused[sc->group_model[i]],
					     &sc->lora_refused[sc->n_models]};
			for (int k = 0; k < 2; k++)
				if (*first[k] < 0)
					*first[k] = (int32_t)i;
		}
	}
	if (rc == 0)
		rc = lsim_scn_check_share(sc, d);
	if (rc == 0)
		rc = lsim_scn_check_chunked_prefill(sc, d);
	if (rc == 0)
		rc = lsim_scn_check_memory(sc, d);
	if (rc == 0 && sc->n_nodes > 0)
		rc = lsim_scn_place(sc, d);
	if (rc == 0) {
		lsim_scn_dump_config(sc, &sc->effective, false);
		if (sc->effective.failed)
			rc = LSIM_ENOMEM;
	}
	if (rc == 0)
		rc = lsim_scn_compute_run_id(sc, d);
	if (rc != 0) {
		lsim_scenario_destroy(sc);
		return lsim_diag_ensure(d, rc); /* allocation failures come bare */
	}
	*out = sc;
	return 0;
}

static void release_run(struct lsim_scenario *sc)
{
	lsim_jobs_destroy(sc->js); /* its events are in the run's engine */
	sc->js = NULL;
	if (sc->sim_live)
		lsim_sim_release(&sc->sim);
	sc->sim_live = false;
	for (size_t i = 0; sc->group_perf && i < sc->n_insts; i++) {
		lsim_perf_destroy(sc->group_perf[i].time);
		lsim_perf_destroy(sc->group_perf[i].work);
	}
	free(sc->group_perf);
	sc->group_perf = NULL;
	free(sc->shares);
	sc->shares = NULL;
	sc->n_shares = 0;
	free(sc->rec_insts);
	free(sc->rec_classes);
	sc->rec_insts = NULL;
	sc->rec_classes = NULL;
}

void lsim_scenario_destroy(struct lsim_scenario *sc)
{
	if (!sc)
		return;
	release_run(sc);
	destroy_policies(sc);
	free(sc->classes);
	free(sc->placement);
	free(sc->placement_gpu);
	free(sc->nodes_init);
	free(sc->rt_nodes);
	free(sc->used_init);
	free(sc->rt_used);
	free(sc->groups);
	free(sc->bg);
	free(sc->lc);
	free(sc->fail_t);
	lsim_job_list_release(&sc->job_list);
	lsim_pool_spec_release(&sc->pool);
	free(sc->pool_profiles);
	free(sc->pool_profile_ptrs);
	free(sc->job_rows);
	lsim_tsrec_destroy(sc->job_rec);
	sc->job_rec = NULL;
	free(sc->job_events);
	lsim_prices_destroy(sc->prices);
	free(sc->offers);
	free(sc->gpu_choice);
	free(sc->cheap_profiles);
	free(sc->cheap_state);
	lsim_carbon_destroy(sc->carbon);
	free(sc->fail_inst);
	for (size_t i = 0; sc->table_dirs && i < sc->n_insts; i++)
		free(sc->table_dirs[i]);
	free(sc->table_dirs);
	free(sc->gpus);
	free(sc->models);
	free(sc->nodes);
	free(sc->insts);
	free(sc->len_values[0]);
	free(sc->len_values[1]);
	free(sc->pairs);
	free(sc->traces);
	free(sc->model_shares);
	free(sc->model_names);
	free(sc->model_labels);
	free(sc->model_label_idx);
	free(sc->model_share_by_idx);
	free(sc->group_model);
	free(sc->lora_refused);
	lsim_buf_release(&sc->effective);
	free(sc->dir);
	lsim_doc_destroy(sc->doc);
	free(sc);
}

const char *lsim_scenario_effective(const struct lsim_scenario *sc)
{
	return sc->effective.data ? sc->effective.data : "";
}

uint64_t lsim_scenario_seed(const struct lsim_scenario *sc)
{
	return (uint64_t)sc->top.seed;
}

const char *lsim_scenario_run_id(const struct lsim_scenario *sc)
{
	return sc->run_id;
}

bool lsim_scenario_declares_slo(const struct lsim_scenario *sc)
{
	for (size_t i = 0; i < sc->n_classes; i++)
		if (sc->classes[i].ttft > 0 || sc->classes[i].tpot > 0 || sc->classes[i].e2e > 0)
			return true;
	return false;
}

int64_t lsim_scenario_gpus(const struct lsim_scenario *sc)
{
	int64_t n = 0;
	for (size_t i = 0; i < sc->n_nodes; i++)
		n += (int64_t)sc->nodes[i].count * (int64_t)sc->nodes[i].gpus_per_node;
	return n;
}

/* ---- running ---- */

struct progress_bridge {
	lsim_progress_fn fn;
	void *ctx;
};

static void progress_hook(void *ctx, const struct lsim_sim *s, lsim_time now)
{
	struct progress_bridge *b = ctx;
	struct lsim_progress p = {
		.sim_s = lsim_time_to_s(now),
		.done = s->n_done,
		/* n_reqs is the slots' high-water mark, not the arrivals */
		.arrived = s->n_arrived - (s->pending_slot >= 0 ? 1 : 0),
		.events = lsim_events_processed(s->sv.eng),
		.fraction = s->workload_done ? 1 : lsim_workload_fraction(s->workload),
	};
	if (s->run_limit > 0) {
		double t = (double)now / (double)s->run_limit;
		p.fraction = t > p.fraction ? (t > 1 ? 1 : t) : p.fraction;
	}
	b->fn(b->ctx, &p);
}

static void free_rngs(struct run_rngs *rngs)
{
	gsl_rng_free(rngs->arrivals);
	gsl_rng_free(rngs->lengths);
	for (size_t i = 0; i < 64; i++)
		gsl_rng_free(rngs->shaping[i]);
	free(rngs->trace.path);
	memset(rngs, 0, sizeof *rngs);
}

/*
 * A refusal from a layer below the scenario (the generator, the shaping
 * of a trace, the engine) names its key ("workload.spike_length") but no
 * file: give it the scenario's file, line and column of that key, or of
 * the nearest section holding it when the key is left at its default
 * (zipf without max: the line of workload.prompt). `check`, sweep planning
 * and `run` all pass through assemble, so they refuse alike.
 */
static int locate_key(const struct lsim_scenario *sc, struct lsim_diag *d, int rc)
{
	if (!d || d->file[0] || !d->key[0] || !sc->doc)
		return rc;
	char buf[sizeof d->key], msg[sizeof d->msg], key[sizeof d->key];
	snprintf(buf, sizeof buf, "%s", d->key);
	snprintf(key, sizeof key, "%s", d->key);
	snprintf(msg, sizeof msg, "%s", d->msg);
	const struct lsim_node *n = sc->doc->root, *found = NULL;
	for (char *save = NULL, *part = strtok_r(buf, ".", &save); part && n;
	     part = strtok_r(NULL, ".", &save)) {
		char *br = strchr(part, '[');
		size_t idx = 0;
		if (br) {
			idx = strtoul(br + 1, NULL, 10);
			*br = '\0';
		}
		n = lsim_node_get(n, part);
		if (n && br)
			n = n->kind == LSIM_NODE_SEQ && idx < n->n ? n->items[idx] : NULL;
		if (n)
			found = n;
	}
	if (!found || found == sc->doc->root)
		return rc;
	return lsim_cfg_error(d, sc->doc, found, key, rc, "%s", msg);
}

/*
 * Assembles a run: a fresh engine, the policies (again after the first
 * run), the links, the fleet and its instances (memory fit included), the
 * jobs and the request workload, opened in *w. Every refusal a run can
 * meet before its first event is met here, so `check` finds it too.
 */
static int assemble(struct lsim_scenario *sc, struct run_rngs *rngs,
		    struct lsim_workload **w, struct lsim_diag *d)
{
	release_run(sc);
	int rc = lsim_sim_init(&sc->sim, (uint64_t)sc->top.seed, d);
	if (rc != 0)
		return rc;
	sc->sim_live = true;
	if (sc->runs++ > 0 && (rc = make_policies(sc, d)) != 0)
		return rc;
	sc->sim.router = sc->policies[LSIM_ROLE_ROUTER];
	sc->sim.queue = sc->policies[LSIM_ROLE_QUEUE];
	sc->sim.profiler = sc->policies[LSIM_ROLE_PROFILER];
	sc->sim.qos = sc->policies[LSIM_ROLE_QOS];
	sc->sim.monitor = sc->policies[LSIM_ROLE_MONITOR];
	sc->sim.adaptor = sc->policies[LSIM_ROLE_ADAPTOR];
	sc->sim.synchronizer = sc->policies[LSIM_ROLE_SYNCHRONIZER];
	sc->sim.classes = sc->classes;
	sc->sim.n_classes = sc->n_classes;
	sc->sim.model_names = sc->model_names;
	sc->sim.n_models = sc->n_models;
	sc->sim.model_labels = sc->model_labels;
	sc->sim.model_label_idx = sc->model_label_idx;
	sc->sim.n_model_labels = sc->n_model_labels;
	sc->sim.model_shares = sc->model_share_by_idx;
	sc->sim.lora_adapters = (int32_t)sc->lora_wl.adapters;
	sc->sim.lora_zipf = sc->lora_wl.popularity == 1;
	sc->sim.lora_alpha = sc->lora_wl.alpha;
	sc->sim.lora_share = sc->lora_wl.share;
	sc->sim.lora_refused = sc->lora_refused;
	sc->sim.sv.pue = sc->power.pue;
	sc->sim.sv.power_alpha = sc->power.alpha;
	sc->sim.sv.carbon_g_per_kwh = sc->power.carbon_intensity;
	sc->sim.sv.carbon = sc->carbon;
	sc->sim.zero_output = sc->wl.zero_output;
	sc->sim.skip_bad_lines = sc->wl.on_error == 1;
	sc->sim.sample_period = sc->output.sample_period;
	sc->sim.sv.macro_steps = sc->top.macro_steps;
	sc->sim.records_in_memory = (size_t)sc->output.records_in_memory;
	sc->sim.ts_rows = (uint64_t)sc->output.timeseries_rows;
	rc = lsim_scn_build_network(sc, d);
	if (rc == 0)
		rc = lsim_scn_setup_fleet(sc);
	if (rc == 0)
		rc = lsim_scn_build_instances(sc, d);
	if (rc == 0)
		rc = lsim_scn_attach_shares(sc, d);
	if (rc == 0)
		rc = lsim_scn_setup_serverless(sc, d);
	if (rc == 0)
		rc = lsim_scn_start_jobs(sc, d);
	sc->sim.has_jobs = sc->have_jobs;
	lsim_tsrec_destroy(sc->job_rec);
	sc->job_rec = NULL;
	sc->job_frag_sum = 0;
	sc->job_frag_n = 0;
	if (sc->have_jobs) {
		sc->sim.sample_hook = lsim_scn_sample_jobs;
		sc->sim.sample_hook_ctx = sc;
		sc->sim.check_hook = lsim_scn_check_jobs;
		sc->sim.check_hook_ctx = sc;
	}
	if (rc == 0 && sc->n_insts > 0) /* jobs alone need no request workload */
		rc = lsim_scn_open_workload(sc, rngs, w, d);
	return rc != 0 ? locate_key(sc, d, rc) : 0;
}

int lsim_scenario_check(struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct run_rngs rngs = {0};
	struct lsim_workload *w = NULL;
	int rc = assemble(sc, &rngs, &w, d);
	lsim_workload_destroy(w);
	if (rc == 0 && sc->n_insts > 0) /* the lines a run would read */
		rc = lsim_scn_read_trace(sc, d);
	free_rngs(&rngs);
	release_run(sc);
	return rc != 0 ? lsim_diag_ensure(d, rc) : 0;
}

int lsim_scenario_run(struct lsim_scenario *sc, lsim_progress_fn progress,
		      void *progress_ctx, const struct lsim_results **res,
		      struct lsim_diag *d)
{
	struct run_rngs rngs = {0};
	struct lsim_workload *w = NULL;
	int rc = assemble(sc, &rngs, &w, d);
	struct progress_bridge bridge = {progress, progress_ctx};
	if (progress) {
		sc->sim.progress = progress_hook;
		sc->sim.progress_ctx = &bridge;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rc == 0) {
		rc = lsim_sim_run(&sc->sim, w, sc->top.duration, d);
		/* a run-time bound on a key: name its line too */
		if (rc != 0 && !d->file[0] && (!strcmp(d->key, "output.sample_period") ||
						 !strcmp(d->key, "output.timeseries_rows"))) {
			char key[sizeof d->key];
			snprintf(key, sizeof key, "%s", d->key);
			const struct lsim_node *n = lsim_node_get(
				lsim_node_get(sc->doc->root, "output"), key + strlen("output."));
			char msg[sizeof d->msg];
			snprintf(msg, sizeof msg, "%s", d->msg);
			lsim_cfg_error(d, sc->doc, n, key, rc, "%s", msg);
		}
	} else {
		lsim_workload_destroy(w);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc == 0) {
		sc->hit_limit = sc->top.duration > 0 &&
				lsim_now(sc->sim.sv.eng) >= sc->top.duration;
		sc->serving = 0;
		sc->jobs_unfinished = 0; /* lsim_scn_job_results sets it */
		for (size_t i = 0; i < sc->sim.n_inst; i++)
			sc->serving += sc->sim.inst[i]->state != LSIM_INST_STOPPED &&
				       !sc->sim.inst[i]->failed;
	}
	sc->sim.progress = NULL;
	if (rc == 0)
		rc = lsim_sim_results(&sc->sim, &sc->res,
				      &sc->rec_insts, &sc->rec_classes);
	if (rc == 0)
		rc = lsim_scn_job_results(sc);
	free_rngs(&rngs);
	if (rc != 0) /* allocation failures come bare: give them a message */
		return lsim_diag_ensure(d, rc);
	sc->res.wall_s = (double)(t1.tv_sec - t0.tv_sec) +
				 (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	struct lsim_run_info *info = &sc->res.info;
	info->run_id = sc->run_id;
	info->scenario = sc->doc->file;
	info->config_yaml = lsim_scenario_effective(sc);
	info->version = LSIM_VERSION;
	info->seed = (uint64_t)sc->top.seed;
	info->hw_profile = sc->hw_names;
	info->hw_source = sc->hw_sources;
	info->perf_model = sc->perf_desc;
	*res = &sc->res;
	return 0;
}

bool lsim_scenario_unfinished(const struct lsim_scenario *sc, char *buf, size_t size)
{
	const struct lsim_summary *m = &sc->res.summary;
	double jobs_left = sc->jobs_unfinished;
	if (sc->runs == 0 || (m->unfinished <= 0 && jobs_left <= 0))
		return false;
	char what[160] = "", dur[48];
	size_t n = 0;
	if (m->unfinished > 0)
		n += (size_t)snprintf(what, sizeof what, "%.0f of %.0f requests",
				      m->unfinished, m->requests);
	if (jobs_left > 0 && n < sizeof what)
		snprintf(what + n, sizeof what - n, "%s%.0f of %.0f jobs",
			 n ? " and " : "", jobs_left, m->jobs);
	lsim_units_format(LSIM_K_TIME, (double)sc->top.duration, dur, sizeof dur);
	if (sc->hit_limit)
		snprintf(buf, size, "%s unfinished at the end of the run (it stopped at "
			 "duration %s with them in flight)", what, dur);
	else if (sc->serving == 0 && m->unfinished > 0)
		snprintf(buf, size, "%s unfinished at the end of the run (no serving "
			 "instance was left to finish them)", what);
	else
		snprintf(buf, size, "%s unfinished at the end of the run (nothing was left "
			 "to happen while they waited: they stalled)", what);
	return true;
}

bool lsim_scenario_overloaded(const struct lsim_scenario *sc, char *buf, size_t size)
{
	const struct lsim_results *r = &sc->res;
	if (sc->runs == 0 || r->summary.overloaded_instances <= 0 || r->overload_worst < 0)
		return false;
	snprintf(buf, size, "%.0f of %zu instances overloaded: the waiting queue of instance "
		 "%d grew from %.0f to %.0f requests over the run, so its latencies depend "
		 "on how long the run lasts (lower the load or add instances; docs/output.md)",
		 r->summary.overloaded_instances, r->n_insts, (int)r->overload_worst,
		 r->overload_from < 0 ? 0 : r->overload_from, r->overload_to);
	return true;
}

void lsim_scenario_reference(struct lsim_buf *b)
{
	struct {
		const char *title;
		const struct lsim_keydef *keys;
		size_t n;
	} secs[] = {
		{"top level", top_keys, N_OF(top_keys)},
		{"cluster[] (node groups)", node_keys, N_OF(node_keys)},
		{"instances[] (replica groups)", inst_keys, N_OF(inst_keys)},
		{"classes[] (QoS classes)", class_keys, N_OF(class_keys)},
		{"workload", wl_keys, N_OF(wl_keys)},
		{"workload.prompt / workload.output", len_keys, N_OF(len_keys)},
		{"workload.models[] (models by share)", lsim_scn_model_share_keys,
		 lsim_scn_n_model_share_keys},
		{"workload.lora (LoRA adapters of the requests)", lora_wl_keys, N_OF(lora_wl_keys)},
		{"power", power_keys, N_OF(power_keys)},
		{"output", output_keys, N_OF(output_keys)},
		{"network (the cluster's links)", net_keys, N_OF(net_keys)},
		{"network.link_classes[] (link scheduling per flow kind)", lc_keys, N_OF(lc_keys)},
		{"background[] (host-GPU copy streams)", bg_keys, N_OF(bg_keys)},
		{"failures", fail_keys, N_OF(fail_keys)},
		{"jobs (training and fine-tuning)", lsim_scn_job_keys, lsim_scn_n_job_keys},
	};
	for (size_t i = 0; i < N_OF(secs); i++) {
		lsim_buf_printf(b, "\n### %s\n\n| key | type | default | bounds | meaning |\n|---|---|---|---|---|\n",
				secs[i].title);
		lsim_cfg_doc(b, secs[i].keys, secs[i].n);
	}
}
