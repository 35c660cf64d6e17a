/*
 * scenario.c - assembly of a run from a scenario file: the key tables of
 * every section (the single declaration of each key), path resolution
 * relative to the scenario, hardware profiles and models, placement of
 * instances on the cluster's nodes (first fit), the workload, and the
 * effective-config dump stored in every report.
 */
#include <dirent.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "cluster/collective.h"
#include "kernel/csv.h"
#include "kernel/digest.h"
#include "jobs/jobs.h"
#include "jobs/job_policies.h"
#include "serving/memplan.h"
#include "kernel/rng.h"
#include "run/scenario.h"
#include "run/sim.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- sections ---- */

struct top_cfg {
	const char *name;
	int64_t seed;
	lsim_time duration;
	const char *data_dir;
	bool macro_steps;
};

#define T(f) offsetof(struct top_cfg, f)
static const struct lsim_keydef top_keys[] = {
	{"name", LSIM_K_STRING, T(name), "scenario", LSIM_NOBOUNDS, NULL, "name of the scenario"},
	{"seed", LSIM_K_INT, T(seed), "1", 0, 9.0e18, NULL, "seed of every random stream"},
	{"duration", LSIM_K_TIME, T(duration), "0s", 0, 9.0e18, NULL, "stop simulated time here (0: run to completion)"},
	{"data_dir", LSIM_K_STRING, T(data_dir), "", LSIM_NOBOUNDS, NULL, "folder with profiles/ and models.yaml (empty: the shipped calibrate/)"},
	{"macro_steps", LSIM_K_BOOL, T(macro_steps), "false", LSIM_NOBOUNDS, NULL, "simulate each run of decode steps between batch changes as one event (faster; request timings unchanged, a run's output tokens stream back as one message: docs/architecture.md)"},
};
#undef T
static const char *const top_sections[] = {"cluster", "instances", "scheduler",
					   "profiler", "allocator", "qos", "monitor",
					   "adaptor", "synchronizer", "classes",
					   "workload",
					   "power", "output", "network", "background",
					   "failures", "jobs", NULL};

struct node_cfg {
	const char *name;
	const char *gpu;
	int64_t count;
	int64_t gpus_per_node;
};

#define N(f) offsetof(struct node_cfg, f)
static const struct lsim_keydef node_keys[] = {
	{"name", LSIM_K_STRING, N(name), "node", LSIM_NOBOUNDS, NULL, "name of this node group"},
	{"gpu", LSIM_K_STRING, N(gpu), NULL, LSIM_NOBOUNDS, NULL, "hardware profile (calibrate/profiles/NAME.yaml)"},
	{"count", LSIM_K_INT, N(count), "1", 1, 1e6, NULL, "nodes in the group"},
	{"gpus_per_node", LSIM_K_INT, N(gpus_per_node), "8", 1, 64, NULL, "GPUs per node"},
};
#undef N

struct inst_cfg {
	const char *name;
	const char *model;
	const char *gpu;
	const char *gpu_from; /* gpu: cheapest among these ('|'-separated; empty: all) */
	int64_t tp;
	int64_t replicas;
	int64_t dp;	 /* data_parallel_size: ranks per replica */
	bool ep;	 /* enable_expert_parallel */
	int perf;
	const char *perf_table;
	lsim_time cpu_overhead;
	struct lsim_engine_cfg eng;
	lsim_time service_time;
	int service_dist;
	int64_t min_kv_tokens;
	bool cold_start;
	lsim_time engine_init;
	double swap_space; /* per GPU */
	int role;
	int64_t min_replicas, max_replicas; /* -1: replicas */
	const char *price; /* an offer of the price file, or "" */
	bool spot;
	int64_t on_demand_base; /* spot: replicas kept on demand */
	double on_demand_percent; /* spot: of those above the base */
	lsim_time provision_time;
	double capacity_rps;
};

/* GPUs one instance (a replica, or one data-parallel rank of one)
 * occupies: tp per pipeline stage. */
static int64_t replica_gpus(const struct inst_cfg *ic)
{
	return ic->tp * (ic->eng.pp > 1 ? ic->eng.pp : 1);
}

/* GPUs placed together for one replica: its data-parallel ranks' side by
 * side in one node (pp is 1 with data parallelism). */
static int64_t placed_gpus(const struct inst_cfg *ic)
{
	return replica_gpus(ic) * ic->dp;
}

static int64_t max_replicas(const struct inst_cfg *ic)
{
	return ic->max_replicas >= 0 ? ic->max_replicas : ic->replicas;
}

static int64_t min_replicas(const struct inst_cfg *ic)
{
	return ic->min_replicas >= 0 ? ic->min_replicas : ic->replicas;
}

enum { PERF_ROOFLINE, PERF_TABLE, PERF_SERVICE };

#define I(f) offsetof(struct inst_cfg, f)
static const struct lsim_keydef inst_keys[] = {
	{"name", LSIM_K_STRING, I(name), "instance", LSIM_NOBOUNDS, NULL, "name of this instance group"},
	{"model", LSIM_K_STRING, I(model), "Llama-3.1-8B", LSIM_NOBOUNDS, NULL, "model from the catalogue (calibrate/models.yaml)"},
	{"gpu", LSIM_K_STRING, I(gpu), NULL, LSIM_NOBOUNDS, NULL, "hardware profile of its GPUs, or cheapest: the GPU kind with a profile (in the cluster, if any) that holds a replica at the lowest price per replica-hour in the price file"},
	{"gpu_from", LSIM_K_STRING, I(gpu_from), "", LSIM_NOBOUNDS, NULL, "with gpu: cheapest, the GPU kinds to choose from, '|'-separated (e.g. H100-SXM|A100-80GB-SXM; empty: every kind in the price file)"},
	{"tp", LSIM_K_INT, I(tp), "1", 1, 64, NULL, "tensor-parallel degree (GPUs per pipeline stage)"},
	{"pp", LSIM_K_INT, I(eng.pp), "1", 1, 64, NULL, "pipeline-parallel stages of tp GPUs each (in one node if one has room, else a node per stage); the layers split as vLLM splits them (the embedding on the first stage, the LM head and sampler on the last); up to pp batches in flight, each stage computing one at a time and sending its activations to the next by NCCL send/recv (docs/parallelism.md)"},
	{"replicas", LSIM_K_INT, I(replicas), "1", 1, 1e5, NULL, "number of replicas (with data_parallel_size D, each one a data-parallel group of D ranks)"},
	{"data_parallel_size", LSIM_K_INT, I(dp), "1", 1, 64, NULL, "vLLM's data_parallel_size: each replica is D engine ranks of tp GPUs, side by side in one node, each with its own scheduler and KV cache, behind vLLM's DP load balancer (4 x waiting + running on counts published every 100 ms); for an MoE model the ranks step in lockstep and need enable_expert_parallel (docs/parallelism.md)"},
	{"enable_expert_parallel", LSIM_K_BOOL, I(ep), "false", LSIM_NOBOUNDS, NULL, "vLLM's enable_expert_parallel: an MoE model's experts split over the data_parallel_size ranks (tp 1, perf: table), each rank's expert time for its share of every rank's tokens plus two all-to-alls per layer on the GPUs' fabric (docs/parallelism.md)"},
	{"perf", LSIM_K_ENUM, I(perf), "roofline", LSIM_NOBOUNDS, "roofline|table|service", "perf model backend"},
	{"perf_table", LSIM_K_STRING, I(perf_table), "", LSIM_NOBOUNDS, NULL, "profile folder for perf: table (holds tp<N>/)"},
	{"cpu_overhead", LSIM_K_TIME, I(cpu_overhead), "0s", 0, 1e10, NULL, "CPU time added to every iteration"},
	{"max_num_seqs", LSIM_K_INT, I(eng.max_num_seqs), "256", 1, 1e6, NULL, "most sequences in a batch"},
	{"max_num_batched_tokens", LSIM_K_INT, I(eng.max_num_batched_tokens), "2048", 1, 1e7, NULL, "token budget of one iteration"},
	{"block_size", LSIM_K_INT, I(eng.block_size), "16", 1, 4096, NULL, "tokens per KV block"},
	{"num_gpu_blocks", LSIM_K_INT, I(eng.num_gpu_blocks), "0", 0, 1e9, NULL, "KV blocks (0: vLLM's memory plan, docs/memory.md: memory x gpu_memory_utilization - weights - activation peak - non-torch, least over the ranks)"},
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

/* workload.models: requests assigned to models by share. */
struct model_share {
	const char *name;
	double share;
};
#define MS(f) offsetof(struct model_share, f)
static const struct lsim_keydef model_share_keys[] = {
	{"name", LSIM_K_STRING, MS(name), NULL, LSIM_NOBOUNDS, NULL, "model (an instance group's model or name)"},
	{"share", LSIM_K_DOUBLE, MS(share), NULL, 0, 1, NULL, "fraction of requests for it"},
};
#undef MS

struct wl_cfg {
	int kind;
	int arrival;
	double rate, cv;
	double rate_on, rate_off, amplitude, spike_factor;
	lsim_time mean_on, mean_off, period, spike_every, spike_length;
	lsim_time window_start, window_end;
	const char *lengths_from;
	double time_scale, keep, rate_scale;
	int64_t repeat;
	int on_error;
	int zero_output;
	int64_t count;
	lsim_time duration;
	const char *path;
	int time_format;
	const char *arrival_column, *prompt_column, *output_column, *class_column;
	const char *model_column, *tenant_column;
	bool jsonl_mapped; /* kind jsonl with arrival/prompt/output keys given */
};
enum { WL_GENERATOR, WL_CSV, WL_JSONL, WL_AUTO };

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
static const char *const wl_sections[] = {"prompt", "output", "traces", "models", NULL};

struct len_cfg {
	int dist;
	double value, low, high, mean, stddev, exponent;
	int64_t min, max;
};
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

struct power_cfg {
	double pue, alpha, carbon_intensity;
	const char *carbon_trace;
	lsim_time carbon_period;
	const char *prices;
};
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

/* network: the links of the cluster (sim/cluster/links.h); 0 bandwidths take the
 * GPU profile's pcie_bw / nvlink_bw. */
struct net_cfg {
	int64_t gpus_per_switch, nodes_per_tor;
	double pcie_bw, host_bw, nvlink_bw, nic_bw, oversubscription, spine_bw,
		storage_bw;
	lsim_time pcie_latency, host_latency, nvlink_latency, nic_latency,
		tor_latency, spine_latency, storage_latency;
	lsim_time util_window;
	bool messages;
	bool allreduce_on_links;
};
#define NC(f) offsetof(struct net_cfg, f)
static const struct lsim_keydef net_keys[] = {
	{"gpus_per_switch", LSIM_K_INT, NC(gpus_per_switch), "2", 1, 64, NULL, "GPUs sharing one PCIe switch uplink to the host"},
	{"nodes_per_tor", LSIM_K_INT, NC(nodes_per_tor), "32", 1, 1e5, NULL, "nodes under one top-of-rack switch"},
	{"pcie_bw", LSIM_K_BW, NC(pcie_bw), "0", 0, 1e13, NULL, "GPU PCIe link, per direction (0: the GPU profile's pcie_bw)"},
	{"host_bw", LSIM_K_BW, NC(host_bw), "63GB/s", 1, 1e13, NULL, "PCIe switch uplink / root complex, shared by both directions"},
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
	{"allreduce_on_links", LSIM_K_BOOL, NC(allreduce_on_links), "true", LSIM_NOBOUNDS, NULL, "tp > 1 (roofline, or table without a measured allreduce.csv): each step's ring all-reduce data moves as flows between the group's GPUs (contending on NVLink or PCIe) after its compute"},
	{"util_window", LSIM_K_TIME, NC(util_window), "100ms", 1000, 1e13, NULL, "time constant of the PCIe load that slows kernels (pcie_interference)"},
};
#undef NC

/* jobs: training and fine-tuning jobs on the cluster's GPUs (sim/jobs/jobs.h). */
struct job_cfg {
	int source;
	const char *path;
	const char *scheduler, *allocator;
	int64_t count;
	double load, mean_gpus;
	lsim_time ckpt_interval, gpu_mtbf;
	double efficiency, storage_bw;
	const char *cluster_name, *quotas;
	int traffic;
};
enum { JOBS_CSV, JOBS_ALIBABA, JOBS_PHILLY, JOBS_STATS };
#define J(f) offsetof(struct job_cfg, f)
static const struct lsim_keydef job_keys[] = {
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
#undef J

/* failures: instances and the coordinator fail. */
struct fail_cfg {
	lsim_time mtbf, coordinator_mtbf;
	int distribution;
	double shape;
	const char *trace;
	bool replace;
	lsim_time spot_mtbr, spot_warning, node_mtbf, gpu_mtbf;
};
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

/* background: host <-> GPU copy streams sharing the links. */
struct bg_cfg {
	int64_t gpu;
	int direction;
	double block;
	int64_t count, streams;
	lsim_time gap, start;
	double staging_bw;
};
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
};
#undef B

struct output_cfg {
	lsim_time sample_period;
	int64_t records_in_memory;
};
static const struct lsim_keydef output_keys[] = {
	{"sample_period", LSIM_K_TIME, offsetof(struct output_cfg, sample_period), "1s", 0, 1e13, NULL, "time-series sampling period (0: off)"},
	{"records_in_memory", LSIM_K_INT, offsetof(struct output_cfg, records_in_memory), "262144", 1, 1e9, NULL, "request records held in memory; beyond this they go to a temporary file (long runs)"},
};

/* ---- the scenario ---- */

struct lsim_scenario {
	struct lsim_doc *doc;
	char *dir; /* folder of the scenario file */
	struct top_cfg top;
	struct node_cfg *nodes;
	size_t n_nodes;
	struct inst_cfg *insts;
	size_t n_insts;
	struct lsim_qos_class *classes;
	size_t n_classes;
	struct lsim_policy *policies[LSIM_ROLE_COUNT];
	int32_t *placement; /* node of each replica's stages, in instance order
			     * (with a cluster): pp entries per replica */
	struct wl_cfg wl;
	struct len_cfg len[2];
	int32_t *len_values[2];
	const char **traces; /* workload.traces: paths as written (tenants) */
	struct model_share *model_shares; /* workload.models */
	size_t n_model_shares;
	/* distinct models of the instance groups, and the labels naming them
	 * (model names, then group names) */
	const char **model_names;
	size_t n_models;
	const char **model_labels;
	int32_t *model_label_idx;
	size_t n_model_labels;
	double *model_share_by_idx; /* share of each model, or NULL */
	int32_t *group_model;	    /* model index of each instance group */
	size_t n_traces;
	int32_t *pairs; /* workload.lengths_from: prompt, output, prompt, ... */
	size_t n_pairs;
	size_t n_len_values[2];
	struct power_cfg power;
	struct output_cfg output;
	struct net_cfg net;
	struct bg_cfg *bg;
	size_t n_bg;
	struct fail_cfg fail;
	/* jobs */
	bool have_jobs;
	struct job_cfg jobs;
	struct lsim_job_list job_list;
	struct lsim_pool_spec pool;
	struct lsim_gpu_profile *pool_profiles; /* per pool type */
	const struct lsim_gpu_profile **pool_profile_ptrs;
	struct lsim_jobs *js;
	struct lsim_job_row *job_rows;
	struct lsim_job_sample *job_ts;
	size_t n_job_ts, cap_job_ts;
	struct lsim_job_event_row *job_events;
	struct lsim_prices *prices;
	const struct lsim_instance_price **offers; /* per instances[] entry, or NULL */
	struct lsim_carbon_series *carbon;
	lsim_time *fail_t; /* failures.trace */
	int32_t *fail_inst;
	size_t n_fail;
	int32_t *placement_gpu; /* first local GPU of each stage on its node */
	int32_t gpus_per_node_max;
	/* the nodes after the initial placement, and as the run changes them */
	struct lsim_node_info *nodes_init, *rt_nodes;
	uint64_t *used_init, *rt_used; /* per node: local GPUs taken (bit i) */
	size_t n_rt_nodes;
	struct lsim_group *groups; /* per instances[] entry, for the adaptor */
	/* loaded data, parallel to insts */
	struct lsim_gpu_profile *gpus;
	char (*gpu_choice)[64]; /* per group: the kind gpu: cheapest chose */
	struct lsim_model_arch *models;
	char **table_dirs;
	/* per group, during a run: the perf models its replicas share (one
	 * holder each here; NULL until its first replica): its time model and,
	 * with a table, the roofline its work comes from */
	struct group_perf {
		struct lsim_perf *time, *work;
	} *group_perf;
	struct lsim_buf effective;
	char run_id[17];
	char hw_names[256];
	char hw_sources[1024];
	char perf_desc[512];
	/* results of the last run */
	struct lsim_sim sim;
	bool sim_live;
	int runs;
	bool hit_limit;	   /* it stopped at duration, events still queued */
	int64_t serving;   /* instances neither stopped nor failed at its end */
	double jobs_unfinished; /* training jobs queued or running at its end */
	struct lsim_results res;
	struct lsim_inst_record *rec_insts;
	struct lsim_class_record *rec_classes;
};

static int load_failure_trace(struct lsim_scenario *sc, struct lsim_diag *d);
static int load_costs(struct lsim_scenario *sc, struct lsim_diag *d);
static int load_jobs(struct lsim_scenario *sc, struct lsim_diag *d);
static int data_paths(const struct lsim_scenario *sc, char *profiles, char *catalogue,
		      size_t size);

static char *resolve(const struct lsim_scenario *sc, const char *p)
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

/* Binds the list parent.key (path: its name in messages; parent NULL: the
 * root) into an array of elem-sized entries. */
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

static int bind_list_in(struct lsim_scenario *sc, const struct lsim_node *parent,
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
	return bind_list_in(sc, NULL, key, key, keys, nkeys, out, n_out, elem,
			    required, d);
}

static int bind_section(struct lsim_scenario *sc, const struct lsim_node *parent,
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
 * empty: the run id hashes their contents instead (compute_run_id). */
static void dump_config(const struct lsim_scenario *sc, struct lsim_buf *b, bool for_id)
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
	lsim_cfg_dump(b, 0, top_keys, N_OF(top_keys), &top);
	lsim_buf_printf(b, "cluster:\n");
	for (size_t i = 0; i < sc->n_nodes; i++) {
		lsim_buf_printf(b, "  -\n");
		lsim_cfg_dump(b, 4, node_keys, N_OF(node_keys), &sc->nodes[i]);
	}
	lsim_buf_printf(b, "instances:\n");
	for (size_t i = 0; i < sc->n_insts; i++) {
		struct inst_cfg ic = sc->insts[i];
		if (for_id)
			ic.perf_table = "";
		lsim_buf_printf(b, "  -\n");
		lsim_cfg_dump(b, 4, inst_keys, N_OF(inst_keys), &ic);
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
	lsim_cfg_dump(b, 2, wl_keys, N_OF(wl_keys), &wl);
	if (sc->n_traces > 0 && !for_id) {
		lsim_buf_printf(b, "  traces:\n");
		for (size_t i = 0; i < sc->n_traces; i++)
			lsim_buf_printf(b, "    - \"%s\"\n", sc->traces[i]);
	}
	if (sc->n_model_shares > 0) {
		lsim_buf_printf(b, "  models:\n");
		for (size_t i = 0; i < sc->n_model_shares; i++) {
			lsim_buf_printf(b, "    -\n");
			lsim_cfg_dump(b, 6, model_share_keys, N_OF(model_share_keys),
				      &sc->model_shares[i]);
		}
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
	lsim_cfg_dump(b, 2, output_keys, N_OF(output_keys), &sc->output);
	lsim_buf_printf(b, "network:\n");
	lsim_cfg_dump(b, 2, net_keys, N_OF(net_keys), &sc->net);
	lsim_buf_printf(b, "failures:\n");
	lsim_cfg_dump(b, 2, fail_keys, N_OF(fail_keys), &fail);
	if (sc->have_jobs) {
		lsim_buf_printf(b, "jobs:\n");
		lsim_cfg_dump(b, 2, job_keys, N_OF(job_keys), &jobs);
	}
	if (sc->n_bg > 0)
		lsim_buf_printf(b, "background:\n");
	for (size_t i = 0; i < sc->n_bg; i++) {
		lsim_buf_printf(b, "  -\n");
		lsim_cfg_dump(b, 4, bg_keys, N_OF(bg_keys), &sc->bg[i]);
	}
}

/* Adds the digest of the file at path, labelled, to h. What is not a
 * regular file (a pipe a trace streams through: reading it here would eat
 * it), or cannot be read, adds its path instead (reading it for the run
 * reports any error). */
static void digest_file(struct lsim_digest *h, const char *label, const char *path)
{
	struct lsim_digest f;
	struct stat st;
	lsim_digest_init(&f);
	lsim_digest_str(h, label);
	if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
	    lsim_digest_file(&f, path) != 0) {
		lsim_digest_str(h, "not read");
		lsim_digest_str(h, path);
		return;
	}
	unsigned char v[8];
	uint64_t x = lsim_digest_value(&f);
	for (int i = 0; i < 8; i++)
		v[i] = (unsigned char)(x >> (8 * i));
	lsim_digest_add(h, v, sizeof v);
}

/* As digest_file for a path relative to the scenario. */
static int digest_scenario_file(const struct lsim_scenario *sc, struct lsim_digest *h,
				const char *label, const char *rel)
{
	char *path = resolve(sc, rel);
	if (!path)
		return LSIM_ENOMEM;
	digest_file(h, label, path);
	free(path);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of folder dir in name order (and, depth 1, those of
 * its subfolders), each name with its digest. */
static int digest_folder(struct lsim_digest *h, const char *dir, int depth)
{
	DIR *dp = opendir(dir);
	if (!dp) {
		digest_file(h, "folder", NULL);
		lsim_digest_str(h, dir);
		return 0;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (struct dirent *e; rc == 0 && (e = readdir(dp));) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **p = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *p);
			if (!p)
				rc = LSIM_ENOMEM;
			else
				names = p;
		}
		if (rc == 0 && !(names[n++] = strdup(e->d_name)))
			rc = LSIM_ENOMEM;
	}
	closedir(dp);
	if (rc == 0)
		qsort(names, n, sizeof *names, cmp_names);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t len = strlen(dir) + strlen(names[i]) + 2;
		char *path = malloc(len);
		struct stat st;
		if (!path) {
			rc = LSIM_ENOMEM;
			break;
		}
		snprintf(path, len, "%s/%s", dir, names[i]);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			digest_file(h, names[i], path);
		} else if (depth > 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			lsim_digest_str(h, names[i]);
			rc = digest_folder(h, path, depth - 1);
		}
		free(path);
	}
	for (size_t i = 0; i < n; i++)
		free(names ? names[i] : NULL);
	free(names);
	return rc;
}

/* A model catalogue entry, field by field. */
static void digest_model(struct lsim_digest *h, const struct lsim_model_arch *m)
{
	char text[600];
	snprintf(text, sizeof text,
		 "%s|%s|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%a|%d|%d", m->name, m->source,
		 m->n_layers, m->hidden, m->n_heads, m->n_kv_heads, m->head_dim,
		 m->intermediate, m->vocab, (int)m->gated_mlp, m->n_experts,
		 m->experts_per_token, m->params, m->bytes_per_param, m->max_context);
	lsim_digest_str(h, "model");
	lsim_digest_str(h, text);
	if (m->tied_embeddings) /* untied entries keep the text they had */
		lsim_digest_str(h, "tied");
}

/*
 * The run id: XXH64 of the configuration (with the seed; file paths left
 * out) and of the contents of what the run reads: each hardware profile
 * file, each model's catalogue entry, each perf table folder, the traces
 * and the other data files (lengths_from, failure and carbon traces, the
 * price file, the job file). The same contents at another path give the
 * same id; a changed byte gives another. Each file is read once more, in
 * full (docs/output.md says what that costs).
 */
static int compute_run_id(struct lsim_scenario *sc)
{
	struct lsim_buf b = {0};
	dump_config(sc, &b, true);
	int rc = b.failed ? LSIM_ENOMEM : 0;
	struct lsim_digest h;
	lsim_digest_init(&h);
	lsim_digest_str(&h, "llmsim run id 2");
	lsim_digest_add(&h, b.data ? b.data : "", b.len);
	free(b.data);
	char profiles[1024], catalogue[1024];
	if (rc == 0)
		rc = data_paths(sc, profiles, catalogue, sizeof profiles);
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++) {
		char path[1200];
		snprintf(path, sizeof path, "%s/%s.yaml", profiles, sc->gpus[i].name);
		digest_file(&h, "gpu", path);
		if (sc->insts[i].perf != PERF_SERVICE)
			digest_model(&h, &sc->models[i]);
		if (sc->insts[i].perf == PERF_TABLE) {
			lsim_digest_str(&h, "perf_table");
			rc = digest_folder(&h, sc->table_dirs[i], 1);
		}
	}
	for (size_t t = 0; rc == 0 && sc->have_jobs && t < (size_t)sc->pool.n_types; t++) {
		char path[1200];
		snprintf(path, sizeof path, "%s/%s.yaml", profiles, sc->pool.types[t]);
		digest_file(&h, "pool gpu", path);
	}
	if (rc == 0 && sc->wl.kind != WL_GENERATOR && sc->wl.path[0])
		rc = digest_scenario_file(sc, &h, "trace", sc->wl.path);
	for (size_t k = 0; rc == 0 && sc->wl.kind != WL_GENERATOR && k < sc->n_traces; k++)
		rc = digest_scenario_file(sc, &h, "trace", sc->traces[k]);
	if (rc == 0 && sc->wl.lengths_from[0])
		rc = digest_scenario_file(sc, &h, "lengths_from", sc->wl.lengths_from);
	if (rc == 0 && sc->fail.trace[0])
		rc = digest_scenario_file(sc, &h, "failures.trace", sc->fail.trace);
	if (rc == 0 && sc->power.carbon_trace[0])
		rc = digest_scenario_file(sc, &h, "carbon_trace", sc->power.carbon_trace);
	if (rc == 0 && sc->prices) {
		if (sc->power.prices[0]) {
			rc = digest_scenario_file(sc, &h, "prices", sc->power.prices);
		} else {
			char shipped[1024];
			snprintf(shipped, sizeof shipped, "%s/prices.yaml", lsim_data_dir());
			digest_file(&h, "prices", shipped);
		}
	}
	if (rc == 0 && sc->have_jobs && sc->jobs.path)
		rc = digest_scenario_file(sc, &h, "jobs", sc->jobs.path);
	snprintf(sc->run_id, sizeof sc->run_id, "%016llx",
		 (unsigned long long)lsim_digest_value(&h));
	return rc;
}

/* Bytes one GPU of a replica of instance group i needs: its share of the
 * weights and of the minimum KV reserve. */
static double bytes_per_gpu(const struct lsim_scenario *sc, size_t i)
{
	const struct inst_cfg *ic = &sc->insts[i];
	if (ic->perf == PERF_SERVICE)
		return 0;
	const struct lsim_model_arch *m = &sc->models[i];
	/* expert parallel: a rank holds 1 / dp of the experts */
	double w = lsim_model_weight_bytes(m);
	if (ic->ep && ic->dp > 1)
		w -= lsim_model_expert_bytes(m) * (1.0 - 1.0 / (double)ic->dp);
	return (w + lsim_model_kv_bytes_per_token(m) * (double)ic->min_kv_tokens) /
	       (double)replica_gpus(ic);
}

static uint64_t gpu_bits(int32_t first, int32_t n)
{
	uint64_t m = n >= 64 ? ~0ULL : ((1ULL << n) - 1);
	return m << first;
}

/* The memory plan of instance group i, and what it was computed from. */
static void plan_group(const struct lsim_scenario *sc, size_t i, struct lsim_memplan_in *mi,
		       struct lsim_memplan *plan)
{
	const struct inst_cfg *ic = &sc->insts[i];
	*mi = lsim_memplan_in_for(&ic->eng, &sc->gpus[i], &sc->models[i], (int32_t)ic->tp);
	lsim_memplan_compute(mi, plan);
}

/*
 * vLLM's memory plan (memplan.h) for each engine instance group: a replica
 * must hold min_kv_tokens of KV (at least one block) after its weights,
 * the activation peak of the profiling pass and the non-torch memory, on
 * its binding rank. The same plan sizes the cache in lsim_instance_init,
 * so check refuses exactly what run would.
 */
static int check_memory(struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		if (ic->perf == PERF_SERVICE)
			continue;
		struct lsim_memplan_in mi;
		struct lsim_memplan plan;
		plan_group(sc, i, &mi, &plan);
		if (plan.blocks >= lsim_memplan_blocks_for(ic->min_kv_tokens, ic->eng.block_size))
			continue;
		char why[768], key[80];
		const char *k = lsim_memplan_explain(&mi, &plan, ic->min_kv_tokens, why,
						     sizeof why);
		snprintf(key, sizeof key, "instances[%zu].%s", i, k);
		struct lsim_node *at = lsim_node_get(list->items[i], k);
		return lsim_cfg_error(d, sc->doc, at ? at : list->items[i], key, LSIM_EINVAL,
				      "%s on %lld x %s does not fit: %s", ic->model,
				      (long long)replica_gpus(ic), sc->gpus[i].name, why);
	}
	return 0;
}

/* The first of n consecutive free GPUs among total, or -1. */
static int32_t first_free_run(uint64_t used, int32_t total, int32_t n)
{
	for (int32_t g = 0; g + n <= total; g++)
		if ((used & gpu_bits(g, n)) == 0)
			return g;
	return -1;
}

/* Gives back a part of a replica (n GPUs from local index g0 on node
 * at). */
static void unplace(struct lsim_node_info *nodes, uint64_t *used, int32_t at,
		    int32_t g0, int32_t n, bool counted)
{
	used[at] &= ~gpu_bits(g0, n);
	nodes[at].gpus_free += n;
	if (counted)
		nodes[at].instances--;
}

/*
 * Places one replica of group i (replica index r; -1 for a scale-out) with
 * the allocator policy: the core marks the nodes that fit (GPU kind, a run
 * of free GPUs), the policy picks one. All tp x pp GPUs go in one node if
 * any node fits them; otherwise, with pp > 1, each stage's tp GPUs go in a
 * node of their own choosing (a pipeline across nodes). A node counts one
 * instance per run of consecutive stages placed on it. Fills node_out and
 * gpu_out (local index) per stage. Returns 0, LSIM_EBUSY when it does not
 * fit, LSIM_EPLUGIN when the allocator picks a node that does not fit.
 */
static int place_replica(struct lsim_scenario *sc, size_t i, int32_t r,
			 struct lsim_node_info *nodes, uint64_t *used, size_t total,
			 int32_t *node_out, int32_t *gpu_out)
{
	const struct inst_cfg *ic = &sc->insts[i];
	/* a data-parallel replica's ranks (pp 1) as one run of GPUs */
	int32_t tp = (int32_t)(ic->tp * ic->dp), pp = ic->eng.pp > 1 ? (int32_t)ic->eng.pp : 1;
	const struct lsim_policy *alloc = sc->policies[LSIM_ROLE_ALLOCATOR];
	const struct lsim_allocator_ops *ops = alloc->type->ops;
	for (int pass = 0; pass < (pp > 1 ? 2 : 1); pass++) {
		int32_t want = pass == 0 ? tp * pp : tp, parts = pass == 0 ? 1 : pp;
		int32_t done = 0;
		int rc = 0;
		for (; done < parts; done++) {
			bool any = false;
			for (size_t j = 0; j < total; j++) {
				nodes[j].fits = strcmp(sc->nodes[nodes[j].group].gpu, ic->gpu) == 0 &&
						nodes[j].gpus_free >= want &&
						first_free_run(used[j], nodes[j].gpus_total, want) >= 0;
				any |= nodes[j].fits;
			}
			if (!any)
				break;
			struct lsim_alloc_request req = {
				.tp = want, .replica = r, .bytes_per_gpu = bytes_per_gpu(sc, i),
			};
			int32_t at = ops->place(alloc->state, &req, nodes, (int32_t)total);
			if (at < 0 || (size_t)at >= total || !nodes[at].fits) {
				rc = LSIM_EPLUGIN;
				break;
			}
			int32_t g0 = first_free_run(used[at], nodes[at].gpus_total, want);
			used[at] |= gpu_bits(g0, want);
			nodes[at].gpus_free -= want;
			if (done == 0 || node_out[done - 1] != at)
				nodes[at].instances++;
			if (pass == 0) {
				for (int32_t st = 0; st < pp; st++) {
					node_out[st] = at;
					gpu_out[st] = g0 + st * tp;
				}
			} else {
				node_out[done] = at;
				gpu_out[done] = g0;
			}
		}
		if (done == parts)
			return 0;
		for (int32_t k = done - 1; k >= 0; k--)
			unplace(nodes, used, node_out[k], gpu_out[k], want,
				k == 0 || node_out[k - 1] != node_out[k]);
		if (rc != 0)
			return rc;
	}
	return LSIM_EBUSY;
}

/*
 * Places every replica (place_replica), after checking that a replica's
 * GPUs have the memory for their share of the weights plus the KV
 * reserve, with 5% of the device kept for activations.
 */
static int place(struct lsim_scenario *sc, struct lsim_diag *d)
{
	size_t total = 0;
	for (size_t i = 0; i < sc->n_nodes; i++)
		total += (size_t)sc->nodes[i].count;
	struct lsim_node_info *nodes = calloc(total ? total : 1, sizeof *nodes);
	size_t n_stages = 0;
	for (size_t i = 0; i < sc->n_insts; i++)
		n_stages += (size_t)(sc->insts[i].replicas *
				     (sc->insts[i].eng.pp > 1 ? sc->insts[i].eng.pp : 1));
	sc->placement = calloc(n_stages ? n_stages : 1, sizeof *sc->placement);
	sc->placement_gpu = calloc(n_stages ? n_stages : 1, sizeof *sc->placement_gpu);
	uint64_t *used = calloc(total ? total : 1, sizeof *used);
	if (!nodes || !sc->placement || !sc->placement_gpu || !used) {
		free(nodes);
		free(used);
		return LSIM_ENOMEM;
	}
	size_t k = 0;
	for (size_t g = 0; g < sc->n_nodes; g++)
		for (int64_t c = 0; c < sc->nodes[g].count; c++, k++) {
			nodes[k].id = (int32_t)k;
			nodes[k].group = (int32_t)g;
			nodes[k].gpus_total = (int32_t)sc->nodes[g].gpus_per_node;
			if (nodes[k].gpus_total > sc->gpus_per_node_max)
				sc->gpus_per_node_max = nodes[k].gpus_total;
			nodes[k].gpus_free = nodes[k].gpus_total;
		}
	const struct lsim_policy *alloc = sc->policies[LSIM_ROLE_ALLOCATOR];
	struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
	int rc = 0;
	size_t next = 0;
	for (size_t i = 0; i < sc->n_insts && rc == 0; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		int32_t pp = ic->eng.pp > 1 ? (int32_t)ic->eng.pp : 1;
		int32_t want = (int32_t)placed_gpus(ic);
		char key[64];
		snprintf(key, sizeof key, "instances[%zu].replicas", i);
		for (int64_t r = 0; r < ic->replicas && rc == 0; r++, next += (size_t)pp) {
			rc = place_replica(sc, i, (int32_t)r, nodes, used, total,
					   &sc->placement[next], &sc->placement_gpu[next]);
			if (rc == LSIM_EBUSY)
				rc = lsim_cfg_error(d, sc->doc, list->items[i], key,
						    LSIM_EINVAL,
						    "not enough %s GPUs in the cluster for replica %lld "
						    "(%d GPUs: tp %lld x %s %d; %s)",
						    ic->gpu, (long long)r + 1, (int)want, (long long)ic->tp,
						    ic->dp > 1 ? "data_parallel_size" : "pp",
						    ic->dp > 1 ? (int)ic->dp : (int)pp,
						    pp > 1 ? "each stage must fit in one node"
							   : "a replica must fit in one node");
			else if (rc == LSIM_EPLUGIN)
				rc = lsim_cfg_error(d, sc->doc, list->items[i], "allocator",
						    LSIM_EPLUGIN,
						    "allocator %s chose a node that does not fit",
						    alloc->type->name);
		}
	}
	/* kept: a run starts from this and places replicas it adds */
	sc->nodes_init = nodes;
	sc->used_init = used;
	sc->n_rt_nodes = total;
	return rc;
}

/* The folders of hardware profiles and the model catalogue. */
static int data_paths(const struct lsim_scenario *sc, char *profiles, char *catalogue,
		      size_t size)
{
	char *base = sc->top.data_dir[0] ? resolve(sc, sc->top.data_dir)
					 : strdup(lsim_data_dir());
	if (!base)
		return LSIM_ENOMEM;
	snprintf(profiles, size, "%s/profiles", base);
	snprintf(catalogue, size, "%s/models.yaml", base);
	free(base);
	return 0;
}

static int load_hw(struct lsim_scenario *sc, struct lsim_diag *d)
{
	char profiles[1024], catalogue[1024];
	if (data_paths(sc, profiles, catalogue, sizeof profiles) != 0)
		return LSIM_ENOMEM;
	sc->gpus = calloc(sc->n_insts, sizeof *sc->gpus);
	sc->models = calloc(sc->n_insts, sizeof *sc->models);
	sc->table_dirs = calloc(sc->n_insts, sizeof *sc->table_dirs);
	if (!sc->gpus || !sc->models || !sc->table_dirs)
		return LSIM_ENOMEM;
	size_t hl = 0, sl = 0, pl = 0;
	for (size_t i = 0; i < sc->n_insts; i++) {
		struct inst_cfg *ic = &sc->insts[i];
		const char *what = "gpu";
		int rc = lsim_gpu_profile_load(profiles, ic->gpu, &sc->gpus[i], d);
		if (rc == 0 && ic->perf != PERF_SERVICE) {
			what = "model";
			rc = lsim_model_load(catalogue, ic->model, &sc->models[i], d);
		}
		if (rc != 0) {
			char key[64];
			struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
			struct lsim_diag inner = *d;
			snprintf(key, sizeof key, "instances[%zu].%s", i, what);
			struct lsim_node *at = lsim_node_get(list->items[i], what);
			if (!at)
				at = list->items[i];
			if (inner.line > 0) {
				/* The profile or catalogue itself is bad: keep its
				 * file, line and key, and say what named it. */
				char where[300] = "--set";
				if (at->line > 0)
					snprintf(where, sizeof where, "%s:%d", sc->doc->file,
						 at->line);
				size_t n = strlen(d->msg);
				snprintf(d->msg + n, sizeof d->msg - n, " (%s of %s, %s)",
					 what[0] == 'g' ? "hardware profile" : "model catalogue",
					 key, where);
				return rc;
			}
			/* Not found: point at the scenario key that named it. */
			lsim_cfg_error(d, sc->doc, at, key, rc, "%s%s%s", inner.msg,
				       inner.file[0] ? " in " : "", inner.file);
			return rc;
		}
		/* vLLM's rule: the attention heads are split evenly over the
		 * tensor-parallel group, the KV heads too (or replicated evenly
		 * when there are fewer of them than GPUs). */
		const struct lsim_model_arch *m = &sc->models[i];
		int kvh = m->n_kv_heads > 0 ? m->n_kv_heads : m->n_heads;
		if (ic->perf != PERF_SERVICE &&
		    (m->n_heads % ic->tp != 0 ||
		     (kvh >= ic->tp ? kvh % ic->tp : ic->tp % kvh) != 0)) {
			struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
			struct lsim_node *at = lsim_node_get(list->items[i], "tp");
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].tp", i);
			return lsim_cfg_error(d, sc->doc, at ? at : list->items[i], key,
					      LSIM_EINVAL,
					      "tp %lld does not divide the %d attention heads "
					      "and %d KV heads of %s evenly",
					      (long long)ic->tp, m->n_heads, kvh, m->name);
		}
		sc->table_dirs[i] = resolve(sc, ic->perf_table);
		if (!sc->table_dirs[i])
			return LSIM_ENOMEM;
		if (ic->perf == PERF_TABLE && !ic->perf_table[0]) {
			struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].perf_table", i);
			return lsim_cfg_error(d, sc->doc, list->items[i], key, LSIM_EINVAL,
					      "perf: table needs perf_table (a profile folder)");
		}
		struct stat st;
		if (ic->perf == PERF_TABLE &&
		    (stat(sc->table_dirs[i], &st) != 0 || !S_ISDIR(st.st_mode))) {
			struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
			struct lsim_node *at = lsim_node_get(list->items[i], "perf_table");
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].perf_table", i);
			return lsim_cfg_error(d, sc->doc, at ? at : list->items[i], key,
					      LSIM_ENOENT, "no profile folder %s",
					      sc->table_dirs[i]);
		}
		if (hl < sizeof sc->hw_names)
			hl += (size_t)snprintf(sc->hw_names + hl, sizeof sc->hw_names - hl,
					       "%s%s", i ? "," : "", sc->gpus[i].name);
		if (sl < sizeof sc->hw_sources)
			sl += (size_t)snprintf(sc->hw_sources + sl,
					       sizeof sc->hw_sources - sl, "%s%s: %s (%s)",
					       i ? "; " : "", sc->gpus[i].name,
					       sc->gpus[i].source, sc->gpus[i].provenance);
		static const char *const perf_names[] = {"roofline", "table", "service"};
		if (pl < sizeof sc->perf_desc)
			pl += (size_t)snprintf(sc->perf_desc + pl,
					       sizeof sc->perf_desc - pl, "%s%s%s%s",
					       i ? "," : "", perf_names[ic->perf],
					       ic->perf == PERF_TABLE ? ":" : "",
					       ic->perf == PERF_TABLE ? ic->perf_table : "");
	}
	return 0;
}

/*
 * vLLM's rule: without chunked prefill a prompt is prefilled in one
 * iteration, so the token budget must hold the longest sequence the
 * instance accepts (prompt and output: a request preempted by recompute
 * prefills both). With less, such a request waits at the head of the
 * queue for ever and the run ends with it unfinished.
 */
/*
 * Data and expert parallelism (data_parallel_size, enable_expert_parallel)
 * as far as they are modelled (docs/parallelism.md); every other
 * combination is refused naming the key.
 */
static int check_dp(struct lsim_scenario *sc, struct lsim_node *root, size_t i,
		    struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[i];
	struct lsim_node *item = lsim_node_get(root, "instances")->items[i];
	char key[96];
	const char *what = NULL;
	if (ic->dp > 1) {
		snprintf(key, sizeof key, "instances[%zu].data_parallel_size", i);
		if (ic->perf == PERF_SERVICE)
			what = "perf: service (a rank needs a model's steps)";
		else if (ic->eng.pp > 1)
			what = "pp > 1";
		else if (ic->role != LSIM_ROLE_BOTH)
			what = "role prefill or decode";
		else if (ic->cold_start)
			what = "cold_start";
		else if (ic->spot)
			what = "spot";
		else if (ic->min_replicas >= 0 || ic->max_replicas >= 0)
			what = "min_replicas or max_replicas (the adaptor adds single instances)";
		else if (sc->fail.mtbf > 0 || sc->fail.gpu_mtbf > 0 || sc->fail.node_mtbf > 0 ||
			 sc->fail.trace[0] || sc->fail.spot_mtbr > 0)
			what = "failures (a failed rank's group is not modelled)";
		if (what)
			return lsim_cfg_error(d, sc->doc, lsim_node_get(item, "data_parallel_size"),
					      key, LSIM_EINVAL,
					      "data_parallel_size %lld with %s is not modelled yet: "
					      "use data_parallel_size 1 (replicas behind the router) "
					      "or drop the other setting", (long long)ic->dp, what);
		/* vLLM shards every expert over the D x tp GPUs by tensor
		 * parallelism then (FusedMoEParallelConfig), which neither
		 * backend times */
		if (sc->models[i].n_experts > 0 && !ic->ep)
			return lsim_cfg_error(d, sc->doc, lsim_node_get(item, "data_parallel_size"),
					      key, LSIM_EINVAL,
					      "data_parallel_size %lld of the MoE model %s without "
					      "enable_expert_parallel: vLLM then shards every expert "
					      "over all %lld GPUs by tensor parallelism, which is not "
					      "modelled; set enable_expert_parallel: true",
					      (long long)ic->dp, sc->models[i].name,
					      (long long)placed_gpus(ic));
	}
	if (!ic->ep)
		return 0;
	snprintf(key, sizeof key, "instances[%zu].enable_expert_parallel", i);
	struct lsim_node *at = lsim_node_get(item, "enable_expert_parallel");
	if (ic->perf == PERF_SERVICE)
		what = "perf: service runs no model, and no experts: set it false";
	else if (sc->models[i].n_experts == 0)
		what = "a dense model has no experts to split: set it false";
	else if (ic->perf != PERF_TABLE)
		what = "expert parallelism is modelled with perf: table only (its moe.csv): "
		       "use perf: table";
	else if (ic->tp > 1)
		what = "expert parallelism across tensor-parallel GPUs is not modelled yet "
		       "(only across data-parallel ranks of tp 1): use tp 1";
	else if (ic->dp < 2)
		what = "it splits the experts over the data_parallel_size ranks: set "
		       "data_parallel_size 2 or more";
	if (what)
		return lsim_cfg_error(d, sc->doc, at ? at : item, key, LSIM_EINVAL,
				      "enable_expert_parallel: %s", what);
	/* each rank holds its share of the experts (the memory plan's) */
	sc->insts[i].eng.experts_per_rank = sc->models[i].n_experts / (int32_t)ic->dp;
	return 0;
}

static int check_chunked_prefill(const struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		if (ic->perf == PERF_SERVICE || ic->eng.enable_chunked_prefill)
			continue;
		int64_t len = ic->eng.max_model_len > 0 ? ic->eng.max_model_len
							: sc->models[i].max_context;
		int64_t budget = ic->eng.max_num_batched_tokens;
		if (budget >= len)
			continue;
		struct lsim_node *at = lsim_node_get(list->items[i], "max_num_batched_tokens");
		if (!at)
			at = lsim_node_get(list->items[i], "enable_chunked_prefill");
		char key[64], from[160];
		snprintf(key, sizeof key, "instances[%zu].max_num_batched_tokens", i);
		if (ic->eng.max_model_len > 0)
			snprintf(from, sizeof from, "max_model_len %lld", (long long)len);
		else
			snprintf(from, sizeof from, "max_model_len %lld (the context of %s)",
				 (long long)len, sc->models[i].name);
		return lsim_cfg_error(d, sc->doc, at ? at : list->items[i], key, LSIM_EINVAL,
				      "%lld is below %s with enable_chunked_prefill: false, so a "
				      "longer request could never be scheduled (vLLM refuses this "
				      "too); raise max_num_batched_tokens to at least %lld, lower "
				      "max_model_len to at most %lld, or set enable_chunked_prefill: "
				      "true", (long long)budget, from, (long long)len,
				      (long long)budget);
	}
	return 0;
}

/* workload.traces: several trace files merged as tenants 0, 1, ... */
static int bind_traces(struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct lsim_node *wl = lsim_node_get(sc->doc->root, "workload");
	struct lsim_node *list = lsim_node_get(wl, "traces");
	if (!list)
		return 0;
	if (list->kind != LSIM_NODE_SEQ || list->n == 0)
		return lsim_cfg_error(d, sc->doc, list, "workload.traces", LSIM_EINVAL,
				      "expected a non-empty list of trace files");
	if (sc->wl.kind == WL_GENERATOR || sc->wl.path[0])
		return lsim_cfg_error(d, sc->doc, list, "workload.traces", LSIM_EINVAL,
				      "traces replaces path and needs kind: csv, jsonl or auto");
	sc->traces = calloc(list->n, sizeof *sc->traces);
	if (!sc->traces)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < list->n; i++) {
		if (list->items[i]->kind != LSIM_NODE_SCALAR)
			return lsim_cfg_error(d, sc->doc, list->items[i], "workload.traces",
					      LSIM_EINVAL, "each entry is a file path");
		sc->traces[i] = list->items[i]->value;
	}
	sc->n_traces = list->n;
	return 0;
}

/* kind: jsonl with arrival_column, prompt_column and output_column given
 * reads those keys (a generic JSONL); all three or none. */
static int check_jsonl_mapping(struct lsim_scenario *sc, struct lsim_diag *d)
{
	static const char *const keys[] = {"arrival_column", "prompt_column",
					   "output_column"};
	struct lsim_node *wl = lsim_node_get(sc->doc->root, "workload");
	int given = 0;
	for (size_t i = 0; i < N_OF(keys); i++)
		given += lsim_node_get(wl, keys[i]) != NULL;
	if (sc->wl.kind != WL_JSONL || given == 0)
		return 0;
	for (size_t i = 0; i < N_OF(keys) && given < 3; i++)
		if (!lsim_node_get(wl, keys[i])) {
			char key[64];
			snprintf(key, sizeof key, "workload.%s", keys[i]);
			return lsim_cfg_error(d, sc->doc, wl, key, LSIM_EINVAL,
					      "a JSONL key mapping needs arrival_column, "
					      "prompt_column and output_column; %s is missing",
					      keys[i]);
		}
	sc->wl.jsonl_mapped = true;
	return 0;
}

static int32_t find_name(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int32_t)i;
	return -1;
}

/*
 * The models the instance groups serve, the labels a trace may use for
 * them (a model name, or a group name that names one model only), and
 * workload.models: shares by which requests are assigned to models.
 */
static int build_models(struct lsim_scenario *sc, struct lsim_diag *d)
{
	size_t n = sc->n_insts;
	sc->model_names = calloc(n, sizeof *sc->model_names);
	sc->group_model = calloc(n, sizeof *sc->group_model);
	sc->model_labels = calloc(2 * n, sizeof *sc->model_labels);
	sc->model_label_idx = calloc(2 * n, sizeof *sc->model_label_idx);
	if (!sc->model_names || !sc->group_model || !sc->model_labels ||
	    !sc->model_label_idx)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *m = sc->insts[i].model;
		int32_t k = find_name(sc->model_names, sc->n_models, m);
		if (k < 0) {
			k = (int32_t)sc->n_models++;
			sc->model_names[k] = m;
			sc->model_labels[sc->n_model_labels] = m;
			sc->model_label_idx[sc->n_model_labels++] = k;
		}
		sc->group_model[i] = k;
	}
	for (size_t i = 0; i < n; i++) {
		const char *g = sc->insts[i].name;
		int32_t k = find_name(sc->model_labels, sc->n_model_labels, g);
		if (k >= 0) {
			if (sc->model_label_idx[k] != sc->group_model[i])
				sc->model_label_idx[k] = -1; /* names two models */
			continue;
		}
		sc->model_labels[sc->n_model_labels] = g;
		sc->model_label_idx[sc->n_model_labels++] = sc->group_model[i];
	}
	/* drop ambiguous group names: a trace naming one is an error */
	size_t k = 0;
	for (size_t i = 0; i < sc->n_model_labels; i++)
		if (sc->model_label_idx[i] >= 0) {
			sc->model_labels[k] = sc->model_labels[i];
			sc->model_label_idx[k++] = sc->model_label_idx[i];
		}
	sc->n_model_labels = k;

	/* disaggregation: prefill and decode instances come in pairs of roles */
	for (size_t i = 0; i < n; i++)
		if (sc->insts[i].eng.first_token == LSIM_FIRST_TOKEN_DECODE &&
		    sc->insts[i].role != LSIM_ROLE_PREFILL) {
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].first_token", i);
			return lsim_cfg_error(d, sc->doc,
					      lsim_node_get(sc->doc->root, "instances")->items[i],
					      key, LSIM_EINVAL,
					      "decode: only a prefill instance (role: prefill) "
					      "hands its first token to another instance");
		}
	for (size_t m = 0; m < sc->n_models; m++) {
		int roles[3] = {0, 0, 0};
		size_t last = 0;
		for (size_t i = 0; i < n; i++)
			if (sc->group_model[i] == (int32_t)m) {
				roles[sc->insts[i].role]++;
				last = i;
			}
		if (roles[LSIM_ROLE_PREFILL] > 0 && roles[LSIM_ROLE_DECODE] == 0) {
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].role", last);
			return lsim_cfg_error(d, sc->doc,
					      lsim_node_get(sc->doc->root, "instances")->items[last],
					      key, LSIM_EINVAL,
					      "model %s has prefill instances but no decode instance "
					      "to hand its requests to", sc->model_names[m]);
		}
		if (roles[LSIM_ROLE_DECODE] > 0 && roles[LSIM_ROLE_PREFILL] == 0) {
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].role", last);
			return lsim_cfg_error(d, sc->doc,
					      lsim_node_get(sc->doc->root, "instances")->items[last],
					      key, LSIM_EINVAL,
					      "model %s has decode instances but no prefill instance: "
					      "decode instances take requests only from prefill ones",
					      sc->model_names[m]);
		}
	}

	struct lsim_node *wl = lsim_node_get(sc->doc->root, "workload");
	int rc = bind_list_in(sc, wl, "models", "workload.models", model_share_keys,
			      N_OF(model_share_keys), (void **)&sc->model_shares,
			      &sc->n_model_shares, sizeof *sc->model_shares, false, d);
	if (rc != 0 || sc->n_model_shares == 0)
		return rc;
	struct lsim_node *list = lsim_node_get(wl, "models");
	if (sc->wl.model_column[0])
		return lsim_cfg_error(d, sc->doc, list, "workload.models", LSIM_EINVAL,
				      "give models by share or model_column, not both");
	sc->model_share_by_idx = calloc(sc->n_models, sizeof *sc->model_share_by_idx);
	if (!sc->model_share_by_idx)
		return LSIM_ENOMEM;
	double sum = 0;
	for (size_t i = 0; i < sc->n_model_shares; i++) {
		const struct model_share *ms = &sc->model_shares[i];
		int32_t j = find_name(sc->model_labels, sc->n_model_labels, ms->name);
		if (j < 0)
			return lsim_cfg_error(d, sc->doc, list->items[i], "workload.models",
					      LSIM_EINVAL,
					      "model '%s' is served by no instance group "
					      "(give an instance group's model or name)",
					      ms->name);
		sc->model_share_by_idx[sc->model_label_idx[j]] += ms->share;
		sum += ms->share;
	}
	if (sum < 0.999999 || sum > 1.000001)
		return lsim_cfg_error(d, sc->doc, list, "workload.models", LSIM_EINVAL,
				      "the shares add up to %g, not 1", sum);
	return 0;
}

/* workload.lengths_from: every (prompt, output) pair of a trace. */
static int load_pairs(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (!sc->wl.lengths_from[0])
		return 0;
	if (sc->wl.kind != WL_GENERATOR)
		return lsim_cfg_error(d, sc->doc, lsim_node_get(sc->doc->root, "workload"),
				      "workload.lengths_from", LSIM_EINVAL,
				      "lengths_from feeds a generator; a trace has its own lengths");
	char *path = resolve(sc, sc->wl.lengths_from);
	if (!path)
		return LSIM_ENOMEM;
	struct lsim_workload *w = NULL;
	int rc = lsim_workload_open_auto(path, &w, d);
	size_t cap = 0;
	struct lsim_req_spec r;
	while (rc == 0) {
		int got = lsim_workload_next(w, &r, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		if (sc->n_pairs == cap) {
			cap = cap ? cap * 2 : 1024;
			int32_t *p = realloc(sc->pairs, 2 * cap * sizeof *p);
			if (!p) {
				rc = LSIM_ENOMEM;
				break;
			}
			sc->pairs = p;
		}
		sc->pairs[2 * sc->n_pairs] = r.prompt_tokens;
		sc->pairs[2 * sc->n_pairs + 1] = r.output_tokens;
		sc->n_pairs++;
	}
	lsim_workload_destroy(w);
	free(path);
	if (rc == 0 && sc->n_pairs == 0)
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(sc->doc->root, "workload"),
				    "workload.lengths_from", LSIM_EINVAL,
				    "the trace has no requests");
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
		n += (int32_t)(max_replicas(&sc->insts[i]) * sc->insts[i].dp);
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
	for (size_t i = 0; rc == 0 && i < n_overrides; i++)
		rc = lsim_doc_set(sc->doc, overrides[i], d);
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
		rc = bind_section(sc, root, "workload", "workload", wl_keys,
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
		rc = check_jsonl_mapping(sc, d);
	if (rc == 0)
		rc = bind_traces(sc, d);
	if (rc == 0)
		rc = build_models(sc, d);
	if (rc == 0 && sc->wl.class_column[0] && sc->n_classes == 0)
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(root, "workload"),
				    "workload.class_column", LSIM_EINVAL,
				    "class_column names classes, but the scenario defines none");
	if (rc == 0)
		rc = load_pairs(sc, d);
	if (rc == 0)
		rc = bind_lengths(sc, 0, d);
	if (rc == 0)
		rc = bind_lengths(sc, 1, d);
	if (rc == 0)
		rc = bind_section(sc, root, "power", "power", power_keys,
				  N_OF(power_keys), NULL, &sc->power, d);
	if (rc == 0)
		rc = bind_section(sc, root, "output", "output", output_keys,
				  N_OF(output_keys), NULL, &sc->output, d);
	if (rc == 0)
		rc = bind_section(sc, root, "network", "network", net_keys,
				  N_OF(net_keys), NULL, &sc->net, d);
	if (rc == 0)
		rc = bind_section(sc, root, "failures", "failures", fail_keys,
				  N_OF(fail_keys), NULL, &sc->fail, d);
	if (rc == 0 && sc->fail.trace[0])
		rc = load_failure_trace(sc, d);
	if (rc == 0)
		rc = load_costs(sc, d);
	if (rc == 0 && lsim_node_get(root, "jobs"))
		rc = load_jobs(sc, d);
	if (rc == 0)
		rc = bind_list(sc, "background", bg_keys, N_OF(bg_keys),
			       (void **)&sc->bg, &sc->n_bg, sizeof *sc->bg, false, d);
	if (rc == 0 && sc->n_bg > 0 && !lsim_node_get(root, "cluster"))
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(root, "background"),
				    "background", LSIM_EINVAL,
				    "background copies move over the cluster's links: "
				    "they need a cluster section");
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		if (min_replicas(ic) <= ic->replicas && ic->replicas <= max_replicas(ic))
			continue;
		char key[64];
		snprintf(key, sizeof key, "instances[%zu].replicas", i);
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(root, "instances")->items[i],
				    key, LSIM_ERANGE,
				    "replicas %lld must lie within min_replicas %lld and "
				    "max_replicas %lld", (long long)ic->replicas,
				    (long long)min_replicas(ic), (long long)max_replicas(ic));
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
		rc = load_hw(sc, d);
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++)
		rc = check_dp(sc, root, i, d);
	if (rc == 0)
		rc = check_chunked_prefill(sc, d);
	if (rc == 0)
		rc = check_memory(sc, d);
	if (rc == 0 && sc->n_nodes > 0)
		rc = place(sc, d);
	if (rc == 0) {
		dump_config(sc, &sc->effective, false);
		if (sc->effective.failed)
			rc = LSIM_ENOMEM;
	}
	if (rc == 0)
		rc = compute_run_id(sc);
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
	free(sc->fail_t);
	lsim_job_list_release(&sc->job_list);
	lsim_pool_spec_release(&sc->pool);
	free(sc->pool_profiles);
	free(sc->pool_profile_ptrs);
	free(sc->job_rows);
	free(sc->job_ts);
	free(sc->job_events);
	lsim_prices_destroy(sc->prices);
	free(sc->offers);
	free(sc->gpu_choice);
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
	lsim_buf_release(&sc->effective);
	free(sc->dir);
	lsim_doc_destroy(sc->doc);
	free(sc);
}

const char *lsim_scenario_effective(const struct lsim_scenario *sc)
{
	return sc->effective.data ? sc->effective.data : "";
}

char *lsim_scenario_memory_plans(const struct lsim_scenario *sc)
{
	struct lsim_buf b = {0};
	const double gib = 1073741824.0;
	lsim_buf_printf(&b, "%s", "");
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		if (ic->perf == PERF_SERVICE)
			continue;
		struct lsim_memplan_in mi;
		struct lsim_memplan plan;
		plan_group(sc, i, &mi, &plan);
		lsim_buf_printf(&b,
				"# instances[%zu] %s: vLLM memory plan per GPU of %lld x %s: "
				"%.3f GiB x %.2f = %.3f GiB - weights %.3f - activations %.3f "
				"- non-torch %.3f = KV %.3f GiB = %lld blocks of %lld tokens%s\n",
				i, ic->name, (long long)replica_gpus(ic), sc->gpus[i].name,
				mi.total_bytes / gib, mi.utilization, plan.budget / gib,
				plan.weights / gib, plan.activation / gib, plan.non_torch / gib,
				plan.kv_bytes / gib, (long long)plan.blocks,
				(long long)ic->eng.block_size,
				ic->eng.num_gpu_blocks > 0 ? " (num_gpu_blocks overrides it)" : "");
	}
	if (b.failed) {
		lsim_buf_release(&b);
		return NULL;
	}
	return b.data;
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

static void fill_len(struct lsim_len_dist *o, const struct len_cfg *l,
		     const int32_t *values, size_t n_values)
{
	memset(o, 0, sizeof *o);
	o->kind = (enum lsim_len_kind)l->dist;
	switch (o->kind) {
	case LSIM_LEN_FIXED: o->a = l->value; break;
	case LSIM_LEN_UNIFORM: o->a = l->low; o->b = l->high; break;
	case LSIM_LEN_LOGNORMAL: o->a = l->mean; o->b = l->stddev; break;
	case LSIM_LEN_EMPIRICAL: break;
	case LSIM_LEN_ZIPF: o->a = l->exponent; break;
	}
	o->min = (int32_t)l->min;
	o->max = (int32_t)l->max;
	o->values = values;
	o->n_values = n_values;
}

/* What reopening the trace needs (shaping's repeat). */
struct trace_ctx {
	const struct lsim_scenario *sc;
	char *path;
};

struct run_rngs {
	gsl_rng *arrivals, *lengths;
	gsl_rng *shaping[64]; /* one per superposed copy */
	struct trace_ctx trace;
};

static int open_one(const struct wl_cfg *c, const char *path,
		    struct lsim_workload **w, struct lsim_diag *d)
{
	/* the scenario's mapping: columns of a CSV, keys of a JSONL (only
	 * when given: jsonl_mapped), label columns of either */
	struct lsim_csv_map map = {
		.arrival_col = c->arrival_column,
		.arrival_format = (enum lsim_time_format)c->time_format,
		.prompt_col = c->prompt_column,
		.output_col = c->output_column,
		.class_col = c->class_column,
		.model_col = c->model_column,
		.tenant_col = c->tenant_column,
	};
	bool labels = c->class_column[0] || c->model_column[0] || c->tenant_column[0];
	int rc;
	if (c->kind == WL_CSV) {
		rc = lsim_workload_csv_open(path, &map, w, d);
	} else if (c->kind == WL_JSONL) {
		if (!c->jsonl_mapped)
			map.arrival_col = map.prompt_col = map.output_col = NULL;
		rc = lsim_workload_jsonl_open_map(path, &map, w, d);
	} else if (labels) { /* auto: the format's own columns plus the labels */
		const char *fmt = NULL;
		struct lsim_csv_map known;
		rc = lsim_workload_detect(path, &fmt, &known, d);
		known.class_col = map.class_col;
		known.model_col = map.model_col;
		known.tenant_col = map.tenant_col;
		if (rc == 0 && strcmp(fmt, "jsonl") == 0) {
			known.arrival_col = known.prompt_col = known.output_col = NULL;
			rc = lsim_workload_jsonl_open_map(path, &known, w, d);
		} else if (rc == 0) {
			rc = lsim_workload_csv_open(path, &known, w, d);
		}
	} else {
		rc = lsim_workload_open_auto(path, w, d);
	}
	if (rc == 0 && c->on_error == 1)
		lsim_workload_set_on_error(*w, LSIM_ON_ERROR_SKIP);
	return rc;
}

/* The trace, or the merge of workload.traces (tenant = position). */
static int open_trace(void *ctx, struct lsim_workload **w, struct lsim_diag *d)
{
	const struct trace_ctx *t = ctx;
	const struct lsim_scenario *sc = t->sc;
	if (sc->n_traces == 0)
		return open_one(&sc->wl, t->path, w, d);
	struct lsim_workload **srcs = calloc(sc->n_traces, sizeof *srcs);
	if (!srcs)
		return LSIM_ENOMEM;
	int rc = 0;
	size_t k = 0;
	for (; k < sc->n_traces && rc == 0; k++) {
		char *path = resolve(sc, sc->traces[k]);
		rc = path ? open_one(&sc->wl, path, &srcs[k], d) : LSIM_ENOMEM;
		free(path);
	}
	if (rc == 0)
		rc = lsim_workload_merge_create(srcs, sc->n_traces, true, w, d);
	else
		for (size_t i = 0; i < k; i++)
			lsim_workload_destroy(srcs[i]);
	free(srcs);
	return rc;
}

/* The mean inter-arrival gap of the (whole) trace, from one streaming pass. */
static int mean_gap(void *ctx, lsim_time *gap, struct lsim_diag *d)
{
	struct lsim_workload *w = NULL;
	int rc = open_trace(ctx, &w, d);
	lsim_time first = 0, last = 0;
	uint64_t n = 0;
	struct lsim_req_spec r;
	while (rc == 0) {
		int got = lsim_workload_next(w, &r, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		if (n++ == 0)
			first = r.arrival;
		last = r.arrival;
	}
	lsim_workload_destroy(w);
	*gap = n > 1 ? (last - first) / (lsim_time)(n - 1) : LSIM_S;
	return rc;
}

static int open_workload(struct lsim_scenario *sc, struct run_rngs *rngs,
			 struct lsim_workload **w, struct lsim_diag *d)
{
	const struct wl_cfg *c = &sc->wl;
	if (c->kind == WL_GENERATOR) {
		struct lsim_gen_params p;
		memset(&p, 0, sizeof p);
		p.arrival = (enum lsim_arrival_kind)c->arrival;
		p.rate = c->rate;
		p.cv = c->cv;
		p.rate_on = c->rate_on;
		p.rate_off = c->rate_off;
		p.mean_on = c->mean_on;
		p.mean_off = c->mean_off;
		p.amplitude = c->amplitude;
		p.period = c->period;
		p.spike_every = c->spike_every;
		p.spike_length = c->spike_length;
		p.spike_factor = c->spike_factor;
		p.count = (uint64_t)c->count;
		p.duration = c->duration;
		fill_len(&p.prompt, &sc->len[0], sc->len_values[0], sc->n_len_values[0]);
		fill_len(&p.output, &sc->len[1], sc->len_values[1], sc->n_len_values[1]);
		p.pairs = sc->pairs;
		p.n_pairs = sc->n_pairs;
		uint64_t seed = (uint64_t)sc->top.seed;
		rngs->arrivals = lsim_rng_create(seed, 0, LSIM_STREAM_ARRIVALS);
		rngs->lengths = lsim_rng_create(seed, 0, LSIM_STREAM_LENGTHS);
		if (!rngs->arrivals || !rngs->lengths)
			return LSIM_ENOMEM;
		return lsim_workload_generator_create(&p, rngs->arrivals,
						      rngs->lengths, w, d);
	}
	rngs->trace.sc = sc;
	rngs->trace.path = resolve(sc, c->path);
	if (!rngs->trace.path)
		return LSIM_ENOMEM;
	bool shaped = c->window_start > 0 || c->window_end > 0 ||
		      c->time_scale != 1.0 || c->keep < 1.0 || c->repeat > 1 ||
		      c->rate_scale != 1.0;
	if (!shaped)
		return open_trace(&rngs->trace, w, d);
	/* rate_scale k > 1: ceil(k) copies, each thinned to k/ceil(k), copy i
	 * shifted by i/ceil(k) of the trace's mean inter-arrival gap */
	size_t copies = c->rate_scale > 1 ? (size_t)ceil(c->rate_scale - 1e-9) : 1;
	struct lsim_shape_params sp = {
		.window_start = c->window_start, .window_end = c->window_end,
		.time_scale = c->time_scale,
		.keep = c->keep * (copies > 1 ? c->rate_scale / (double)copies
					      : c->rate_scale),
		.repeat = (uint64_t)c->repeat,
	};
	lsim_time gap = 0;
	if (copies > 1) {
		int rc = mean_gap(&rngs->trace, &gap, d);
		if (rc != 0)
			return rc;
	}
	struct lsim_workload *srcs[64];
	size_t k = 0;
	int rc = 0;
	for (; k < copies && rc == 0; k++) {
		rngs->shaping[k] = lsim_rng_create((uint64_t)sc->top.seed, 0,
						   k ? LSIM_STREAM_COPY_BASE + k
						     : LSIM_STREAM_SHAPING);
		if (!rngs->shaping[k]) {
			rc = LSIM_ENOMEM;
			continue; /* k still counts this copy: srcs[k] was not made */
		}
		sp.offset = (lsim_time)llround((double)gap * c->time_scale *
					       (double)k / (double)copies);
		rc = lsim_workload_shape_create(open_trace, &rngs->trace, &sp,
						rngs->shaping[k], &srcs[k], d);
	}
	if (rc != 0) {
		for (size_t i = 0; i + 1 < k; i++)
			lsim_workload_destroy(srcs[i]);
		return rc;
	}
	if (copies == 1) {
		*w = srcs[0];
		return 0;
	}
	return lsim_workload_merge_create(srcs, copies, false, w, d);
}

/* The cluster's links: one topology of all nodes, as many GPUs per node
 * as the largest node group; bandwidths not given come from the first
 * node group's GPU profile. */
static int build_network(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (sc->n_nodes == 0)
		return 0;
	const struct net_cfg *c = &sc->net;
	struct lsim_topo_params def;
	lsim_topo_params_default(&def);
	double pcie = def.pcie_bw, nvlink = def.nvlink_bw;
	bool pairs = false;
	for (size_t i = 0; i < sc->n_insts; i++)
		if (strcmp(sc->insts[i].gpu, sc->nodes[0].gpu) == 0) {
			pcie = sc->gpus[i].pcie_bw;
			nvlink = sc->gpus[i].nvlink_bw;
			pairs = sc->gpus[i].fabric == LSIM_FABRIC_NVLINK_PAIRS;
			break;
		}
	int64_t nodes = 0;
	for (size_t i = 0; i < sc->n_nodes; i++)
		nodes += sc->nodes[i].count;
	struct lsim_topo_params p = {
		.nodes = (int32_t)nodes,
		.gpus_per_node = sc->gpus_per_node_max,
		.gpus_per_switch = (int32_t)c->gpus_per_switch,
		.nodes_per_tor = (int32_t)c->nodes_per_tor,
		.pcie_bw = c->pcie_bw > 0 ? c->pcie_bw : pcie,
		.host_bw = c->host_bw,
		.nvlink_bw = c->nvlink_bw > 0 ? c->nvlink_bw : nvlink,
		.nvlink_pairs = pairs,
		.nic_bw = c->nic_bw,
		.oversubscription = c->oversubscription,
		.spine_bw = c->spine_bw,
		.storage_bw = c->storage_bw,
		.pcie_latency = c->pcie_latency,
		.host_latency = c->host_latency,
		.nvlink_latency = c->nvlink_latency,
		.nic_latency = c->nic_latency,
		.tor_latency = c->tor_latency,
		.spine_latency = c->spine_latency,
		.storage_latency = c->storage_latency,
	};
	if (p.gpus_per_switch > p.gpus_per_node)
		p.gpus_per_switch = p.gpus_per_node;
	sc->sim.sv.util_window = c->util_window;
	sc->sim.messages = c->messages;
	int rc = lsim_sim_set_network(&sc->sim, &p, d);
	for (size_t i = 0; rc == 0 && i < sc->n_bg; i++) {
		const struct bg_cfg *b = &sc->bg[i];
		struct lsim_bg_cfg bc = {
			.gpu = (int32_t)b->gpu, .to_host = b->direction == 1,
			.block = b->block, .count = b->count, .streams = b->streams,
			.gap = b->gap, .staging_bw = b->staging_bw, .start = b->start,
		};
		rc = lsim_sim_add_background(&sc->sim, &bc, d);
		if (rc != 0)
			snprintf(d->key, sizeof d->key, "background[%zu].gpu", i);
	}
	return rc;
}

/* Adds one instance of group i with id sim.n_inst, placed on node (first
 * local GPU gpu_local; node -1 without a cluster). */
/* Whether the next replica of group i runs on spot capacity: with spot,
 * its live replicas (the new one included) keep on_demand_base on demand
 * plus on_demand_percent of those above the base, rounded up, and the new
 * one fills whichever side is short. */
static bool next_is_spot(const struct lsim_scenario *sc, size_t i)
{
	const struct inst_cfg *ic = &sc->insts[i];
	if (!ic->spot)
		return false;
	int64_t n = 1, od = 0; /* the new one, and the live on-demand ones */
	for (size_t k = 0; k < sc->sim.n_inst; k++) {
		const struct lsim_instance *in = sc->sim.inst[k];
		if (in->group == (int32_t)i && in->state != LSIM_INST_STOPPED && !in->failed) {
			n++;
			od += !in->spot;
		}
	}
	int64_t base = n < ic->on_demand_base ? n : ic->on_demand_base;
	int64_t want = base + (int64_t)ceil(ic->on_demand_percent / 100.0 * (double)(n - base) - 1e-9);
	return od >= want;
}

/* A table instance's all-reduces move as flows on the links (as the
 * roofline's do) unless its folder has a measured allreduce.csv, whose
 * times stand in for the whole all-reduce. */
static bool table_ar_on_links(const struct lsim_scenario *sc, const struct inst_cfg *ic,
			      const char *dir)
{
	return ic->tp > 1 && sc->sim.sv.net && sc->net.allreduce_on_links &&
	       !lsim_perf_table_has_allreduce(dir, (int)ic->tp);
}

/* Makes an instance of group i; node and gpu_local give each pipeline
 * stage's node and first local GPU (NULL: no cluster). */
static int make_instance(struct lsim_scenario *sc, size_t i, const int32_t *node,
			 const int32_t *gpu_local, struct lsim_instance **out,
			 struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[i];
	int32_t id = (int32_t)sc->sim.n_inst;
	bool spot = next_is_spot(sc, i);
	struct lsim_instance *in = lsim_sim_add_instance(&sc->sim);
	if (!in)
		return LSIM_ENOMEM;
	int rc;
	if (ic->perf == PERF_SERVICE) {
		struct lsim_service_cfg svc = {
			.dist = ic->service_dist,
			.mean = ic->service_time,
		};
		rc = lsim_instance_init_service(in, &sc->sim.sv, id, ic->eng.max_num_seqs,
						&svc, &sc->gpus[i]);
	} else {
		struct lsim_perf *perf = NULL;
		double cpu = lsim_time_to_s(ic->cpu_overhead);
		if (!sc->group_perf &&
		    !(sc->group_perf = calloc(sc->n_insts, sizeof *sc->group_perf))) {
			lsim_sim_drop_instance(&sc->sim);
			return LSIM_ENOMEM;
		}
		struct group_perf *gp = &sc->group_perf[i];
		if (gp->time) {
			perf = lsim_perf_share(gp->time);
			rc = 0;
		} else if (ic->perf == PERF_TABLE) {
			struct lsim_coll_topo ct;
			lsim_coll_topo_from_profile(&sc->gpus[i], &ct);
			struct lsim_table_params tp = {
				.tp = (int)ic->tp,
				.n_layers = sc->models[i].n_layers,
				.cpu_overhead_s = cpu,
				.coll = &ct,
				.act_bytes = (double)sc->models[i].hidden *
					     sc->models[i].bytes_per_param,
				.coll_on_links = table_ar_on_links(sc, ic, sc->table_dirs[i]),
				.ep = ic->ep ? (int)ic->dp : 0,
			};
			rc = lsim_perf_table_create(sc->table_dirs[i], &tp, &perf, d);
			if (rc != 0 && d && !d->key[0]) /* a file that cannot be opened */
				snprintf(d->key, sizeof d->key, "instances[%zu].perf_table", i);
		} else {
			struct lsim_roofline_params rp = {
				.tp = (int)ic->tp,
				.cpu_overhead_s = cpu,
				.allreduce_on_links = ic->tp > 1 && sc->sim.sv.net &&
						      sc->net.allreduce_on_links,
			};
			rc = lsim_perf_roofline_create(&sc->models[i], &sc->gpus[i], &rp,
						       &perf, d);
		}
		if (rc == 0 && !gp->time)
			gp->time = lsim_perf_share(perf);
		struct lsim_engine_cfg eng = ic->eng;
		eng.swap_space = ic->swap_space * (double)replica_gpus(ic);
		if (rc == 0)
			rc = lsim_instance_init(in, &sc->sim.sv, id, &eng, &sc->gpus[i],
						&sc->models[i], (int32_t)ic->tp, perf, d);
	}
	if (rc != 0) {
		lsim_sim_drop_instance(&sc->sim);
		return rc;
	}
	if (node) {
		in->node = node[0];
		in->gpu0 = node[0] * sc->gpus_per_node_max + gpu_local[0];
		if (in->pp > 1) {
			in->stage_node = malloc((size_t)in->pp * sizeof *in->stage_node);
			in->stage_gpu0 = malloc((size_t)in->pp * sizeof *in->stage_gpu0);
			if (!in->stage_node || !in->stage_gpu0)
				return LSIM_ENOMEM; /* freed with the instance */
			for (int32_t st = 0; st < in->pp; st++) {
				in->stage_node[st] = node[st];
				in->stage_gpu0[st] = node[st] * sc->gpus_per_node_max +
						     gpu_local[st];
			}
		}
	}
	if (ic->perf == PERF_TABLE) {
		/* measured times, but the work of a step (what power follows)
		 * comes from the roofline; a profile without its parameters
		 * leaves power on the busy fraction */
		struct lsim_roofline_params rp = {.tp = (int)ic->tp};
		struct group_perf *gp = &sc->group_perf[i];
		if (gp->work)
			in->work_perf = lsim_perf_share(gp->work);
		else if (lsim_perf_roofline_create(&sc->models[i], &sc->gpus[i], &rp,
						   &in->work_perf, NULL) != 0)
			in->work_perf = NULL;
		else
			gp->work = lsim_perf_share(in->work_perf);
	}
	in->group = (int32_t)i;
	in->model_idx = sc->group_model[i];
	in->role = ic->role;
	in->spot = spot;
	in->allreduce_on_links = ic->perf == PERF_TABLE
					 ? table_ar_on_links(sc, ic, sc->table_dirs[i])
					 : ic->perf == PERF_ROOFLINE && ic->tp > 1 && sc->sim.sv.net &&
						   sc->net.allreduce_on_links;
	if (sc->offers && sc->offers[i])
		lsim_billing_from_price(&in->billing, sc->offers[i], (int)replica_gpus(ic), spot);
	*out = in;
	return 0;
}

/* One replica of data-parallel group i: its data_parallel_size ranks,
 * each an instance of tp GPUs side by side from the replica's placement
 * (entry next), made one group behind vLLM's DP balancer, in lockstep for
 * an MoE model. */
static int build_dp_replica(struct lsim_scenario *sc, size_t i, size_t next,
			    struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[i];
	struct lsim_instance *ranks[64];
	for (int64_t k = 0; k < ic->dp; k++) {
		int32_t node = 0, gpu = 0;
		if (sc->placement) {
			node = sc->placement[next];
			gpu = sc->placement_gpu[next] + (int32_t)(k * ic->tp);
		}
		int rc = make_instance(sc, i, sc->placement ? &node : NULL,
				       sc->placement ? &gpu : NULL, &ranks[k], d);
		if (rc != 0)
			return rc;
	}
	if (!lsim_sim_add_dp(&sc->sim, ranks, (int32_t)ic->dp, sc->models[i].n_experts > 0))
		return LSIM_ENOMEM;
	return 0;
}

static int build_instances(struct lsim_scenario *sc, struct lsim_diag *d)
{
	size_t next = 0; /* the replica's first stage in the placement */
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		size_t pp = ic->eng.pp > 1 ? (size_t)ic->eng.pp : 1;
		for (int64_t r = 0; r < ic->replicas; r++, next += pp) {
			if (ic->dp > 1) {
				int rc = build_dp_replica(sc, i, next, d);
				if (rc != 0)
					return rc;
				continue;
			}
			struct lsim_instance *in = NULL;
			int rc = make_instance(sc, i, sc->placement ? &sc->placement[next] : NULL,
					       sc->placement ? &sc->placement_gpu[next] : NULL,
					       &in, d);
			if (rc == 0 && ic->cold_start)
				rc = lsim_instance_cold_start(in, ic->engine_init, d);
			if (rc != 0 && d && !d->file[0] && d->key[0] && !strchr(d->key, '.') &&
			    !strchr(d->key, '[')) {
				/* an instance key (tp: the model does not fit): name
				 * the scenario's group, where the key is written */
				struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
				struct lsim_node *at = lsim_node_get(list->items[i], d->key);
				char key[160], msg[sizeof d->msg];
				snprintf(key, sizeof key, "instances[%zu].%s", i, d->key);
				snprintf(msg, sizeof msg, "%s", d->msg);
				lsim_cfg_error(d, sc->doc, at ? at : list->items[i], key, rc,
					       "%s", msg);
			}
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

/* failures.trace: time_s, instance (the instance's id: its position in
 * instances order, replicas expanded; later ones as they are added). */
static int load_failure_trace(struct lsim_scenario *sc, struct lsim_diag *d)
{
	char *path = resolve(sc, sc->fail.trace);
	if (!path)
		return LSIM_ENOMEM;
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	static const char *const cols[] = {"time_s", "instance"};
	int idx[2] = {0, 0};
	if (rc == 0)
		rc = lsim_csv_require(c, cols, 2, idx, d);
	if (rc != 0 && d && d->line == 0)
		snprintf(d->key, sizeof d->key, "failures.trace");
	size_t cap = 0;
	while (rc >= 0 && (rc = lsim_csv_next(c, d)) > 0) {
		int line = lsim_csv_line(c);
		const char *ts = lsim_csv_field(c, idx[0]), *is = lsim_csv_field(c, idx[1]);
		char *end = NULL;
		double t = strtod(ts ? ts : "", &end);
		if (!ts || end == ts || *end || !(t >= 0) || t > 9e9) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, line,
					   lsim_csv_field_col(c, idx[0]), "time_s",
					   "failure time '%s' is not a time >= 0 in seconds",
					   ts ? ts : "");
			break;
		}
		long v = strtol(is ? is : "", &end, 10);
		if (!is || end == is || *end || v < 0 || v > 1000000) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, line,
					   lsim_csv_field_col(c, idx[1]), "instance",
					   "instance '%s' is not an instance id", is ? is : "");
			break;
		}
		if (sc->n_fail == cap) {
			cap = cap ? 2 * cap : 16;
			lsim_time *pt = realloc(sc->fail_t, cap * sizeof *pt);
			if (pt)
				sc->fail_t = pt;
			int32_t *pi = pt ? realloc(sc->fail_inst, cap * sizeof *pi) : NULL;
			if (pi)
				sc->fail_inst = pi;
			if (!pt || !pi) {
				rc = LSIM_ENOMEM;
				break;
			}
		}
		sc->fail_t[sc->n_fail] = (lsim_time)llround(t * 1e9);
		sc->fail_inst[sc->n_fail++] = (int32_t)v;
	}
	if (rc > 0)
		rc = 0;
	lsim_csv_close(c);
	free(path);
	return rc;
}

/* The price file: power.prices, or the shipped one; loaded once. */
static int load_prices(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (sc->prices)
		return 0;
	char *path = sc->power.prices[0] ? resolve(sc, sc->power.prices) : NULL;
	char shipped[1024];
	snprintf(shipped, sizeof shipped, "%s/prices.yaml", lsim_data_dir());
	int rc = lsim_prices_load(path ? path : shipped, &sc->prices, d);
	free(path);
	return rc;
}


/* Whether a replica of ic on GPUs of profile g holds min_kv_tokens of KV
 * by vLLM's memory plan (what check_memory asks). */
static bool plan_holds(const struct inst_cfg *ic, const struct lsim_gpu_profile *g,
		       const struct lsim_model_arch *m)
{
	struct lsim_memplan_in mi = lsim_memplan_in_for(&ic->eng, g, m, (int32_t)ic->tp);
	struct lsim_memplan plan;
	lsim_memplan_compute(&mi, &plan);
	return plan.blocks >= lsim_memplan_blocks_for(ic->min_kv_tokens, ic->eng.block_size);
}
/*
 * gpu: cheapest. Of the GPU kinds in the price file (and among the
 * cluster's node kinds, with a cluster) that have a hardware profile and
 * hold a replica (weights and min_kv_tokens of KV over its tp x pp GPUs,
 * as placement checks), the one whose cheapest offer costs least per
 * replica-hour (spot price with spot; the first in the file on a tie).
 * That kind becomes the group's GPU and that offer its price.
 */
static int choose_gpu(struct lsim_scenario *sc, size_t i, struct lsim_node *item,
		      struct lsim_diag *d)
{
	struct inst_cfg *ic = &sc->insts[i];
	char key[64], profiles[1024], catalogue[1024];
	snprintf(key, sizeof key, "instances[%zu].gpu", i);
	if (ic->price[0] && strcmp(ic->price, "cheapest") != 0)
		return lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
				      "gpu: cheapest chooses the offer too: leave price "
				      "empty or cheapest");
	if (ic->perf == PERF_TABLE)
		return lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
				      "gpu: cheapest needs perf roofline or service (a "
				      "measured table belongs to one GPU kind)");
	if (data_paths(sc, profiles, catalogue, sizeof profiles) != 0)
		return LSIM_ENOMEM;
	/* every kind listed must have an offer: a typo would silently narrow
	 * the choice */
	char listed[64];
	for (int k = 0; ic->gpu_from[0] && lsim_choice_name(ic->gpu_from, k, listed, sizeof listed);
	     k++) {
		bool offered = false;
		for (size_t j = 0; j < sc->prices->n && !offered; j++)
			offered = strcmp(sc->prices->items[j].gpu, listed) == 0;
		if (!offered) {
			snprintf(key, sizeof key, "instances[%zu].gpu_from", i);
			return lsim_cfg_error(d, sc->doc, lsim_node_get(item, "gpu_from"), key,
					      LSIM_EINVAL, "no offer in the price file for '%s'",
					      listed);
		}
	}
	double gpus = (double)replica_gpus(ic);
	struct lsim_model_arch m;
	if (ic->perf != PERF_SERVICE) {
		struct lsim_diag inner = {0};
		if (lsim_model_load(catalogue, ic->model, &m, &inner) != 0) {
			snprintf(key, sizeof key, "instances[%zu].model", i);
			return lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL, "%s%s%s",
					      inner.msg, inner.file[0] ? " in " : "", inner.file);
		}
	}
	const struct lsim_instance_price *best = NULL;
	double best_price = 0;
	for (size_t k = 0; k < sc->prices->n; k++) {
		const char *kind = sc->prices->items[k].gpu;
		bool seen = false, in_cluster = sc->n_nodes == 0;
		for (size_t j = 0; j < k && !seen; j++)
			seen = strcmp(sc->prices->items[j].gpu, kind) == 0;
		for (size_t g = 0; g < sc->n_nodes && !in_cluster; g++)
			in_cluster = strcmp(sc->nodes[g].gpu, kind) == 0;
		struct lsim_gpu_profile prof;
		struct lsim_diag scratch = {0};
		const struct lsim_instance_price *ip = NULL;
		bool chosen_from = !ic->gpu_from[0] || lsim_choice_index(ic->gpu_from, kind) >= 0;
		if (seen || !in_cluster || !chosen_from ||
		    lsim_gpu_profile_load(profiles, kind, &prof, &scratch) != 0 ||
		    (ic->perf != PERF_SERVICE && !plan_holds(ic, &prof, &m)) ||
		    lsim_prices_cheapest(sc->prices, kind, ic->spot, &ip, &scratch) != 0)
			continue;
		double price = lsim_price_per_gpu_hour(ip, ic->spot) * gpus;
		if (!best || price < best_price) {
			best = ip;
			best_price = price;
		}
	}
	if (!best)
		return lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
				      "no GPU kind with a profile and a%s offer%s%s%s holds %s "
				      "on %d GPUs", ic->spot ? " spot" : "n",
				      sc->n_nodes > 0 ? " in the cluster" : "",
				      ic->gpu_from[0] ? " among " : "", ic->gpu_from, ic->model,
				      (int)gpus);
	snprintf(sc->gpu_choice[i], sizeof sc->gpu_choice[i], "%s", best->gpu);
	ic->gpu = sc->gpu_choice[i];
	sc->offers[i] = best;
	return 0;
}

/* instances[].price offers (from power.prices) and the carbon series. */
static int load_costs(struct lsim_scenario *sc, struct lsim_diag *d)
{
	int rc = 0;
	sc->offers = calloc(sc->n_insts ? sc->n_insts : 1, sizeof *sc->offers);
	sc->gpu_choice = calloc(sc->n_insts ? sc->n_insts : 1, sizeof *sc->gpu_choice);
	if (!sc->offers || !sc->gpu_choice)
		return LSIM_ENOMEM;
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		char key[64];
		snprintf(key, sizeof key, "instances[%zu].price", i);
		struct lsim_node *item = lsim_node_get(sc->doc->root, "instances")->items[i];
		if (ic->gpu_from[0] && !(ic->gpu && strcmp(ic->gpu, "cheapest") == 0)) {
			snprintf(key, sizeof key, "instances[%zu].gpu_from", i);
			rc = lsim_cfg_error(d, sc->doc, lsim_node_get(item, "gpu_from"), key,
					    LSIM_EINVAL, "gpu_from lists the kinds gpu: cheapest "
					    "chooses from; gpu is %s", ic->gpu ? ic->gpu : "not set");
			break;
		}
		if (ic->gpu && strcmp(ic->gpu, "cheapest") == 0) {
			rc = load_prices(sc, d);
			if (rc == 0)
				rc = choose_gpu(sc, i, item, d);
			continue;
		}
		if (!ic->spot && (ic->on_demand_base > 0 || ic->on_demand_percent > 0)) {
			snprintf(key, sizeof key, "instances[%zu].%s", i,
				 ic->on_demand_base > 0 ? "on_demand_base" : "on_demand_percent");
			rc = lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
					    "an on-demand share needs spot: true (without it every "
					    "replica runs on demand)");
			continue;
		}
		if (!ic->price[0]) {
			if (ic->spot)
				rc = lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
						    "spot needs a price offer (instances[].price)");
			continue;
		}
		rc = load_prices(sc, d);
		if (rc != 0) {
			if (d && d->line == 0) /* the file itself: name the key that gave it */
				snprintf(d->key, sizeof d->key, "%s",
					 sc->power.prices[0] ? "power.prices" : "prices");
			break;
		}
		if (strcmp(ic->price, "cheapest") == 0) /* of the group's GPU kind */
			rc = lsim_prices_cheapest(sc->prices, ic->gpu, ic->spot,
						  &sc->offers[i], d);
		else
			rc = lsim_prices_find(sc->prices, ic->price, &sc->offers[i], d);
		if (rc != 0 && d && d->line == 0) {
			/* no such offer: point at the scenario key that named it */
			struct lsim_diag inner = *d;
			struct lsim_node *at = lsim_node_get(item, "price");
			rc = lsim_cfg_error(d, sc->doc, at ? at : item, key, rc, "%s in %s",
					    inner.msg, inner.file);
		}
		if (rc == 0 && ic->spot && !(sc->offers[i]->spot > 0))
			rc = lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
					    "offer %s has no spot price", ic->price);
		if (rc != 0 && d && !strchr(d->key, '['))
			snprintf(d->key, sizeof d->key, "%s", key);
	}
	if (rc == 0 && sc->power.carbon_trace[0]) {
		char *path = resolve(sc, sc->power.carbon_trace);
		if (!path)
			return LSIM_ENOMEM;
		rc = lsim_carbon_load(path, sc->power.carbon_period, &sc->carbon, d);
		if (rc != 0 && d && !d->key[0])
			snprintf(d->key, sizeof d->key, "power.carbon_trace");
		free(path);
	}
	return rc;
}

/* jobs.quotas: "name:gpus,..." as the list's tenants and quotas. */
static int parse_quotas(struct lsim_scenario *sc, struct lsim_node *node,
			struct lsim_diag *d)
{
	const char *s = sc->jobs.quotas;
	while (*s) {
		const char *colon = strchr(s, ':');
		const char *comma = strchr(s, ',');
		if (!comma)
			comma = s + strlen(s);
		char *end = NULL;
		long q = colon && colon < comma ? strtol(colon + 1, &end, 10) : -1;
		if (!colon || colon > comma || colon == s || end != comma || q < 0 ||
		    q > 1000000)
			return lsim_cfg_error(d, sc->doc, lsim_node_get(node, "quotas"),
					      "jobs.quotas", LSIM_EINVAL,
					      "expected name:gpus entries separated by commas "
					      "(e.g. alice:16,bob:8), at '%s'", s);
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)(colon - s), s);
		int32_t t = lsim_job_list_tenant(&sc->job_list, name);
		if (t < 0)
			return LSIM_ENOMEM;
		sc->job_list.quota[t] = (int32_t)q;
		s = *comma ? comma + 1 : comma;
	}
	return 0;
}

/* jobs: the list (read or drawn), and the pool: the cluster's nodes. */
static int load_jobs(struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct lsim_node *node = lsim_node_get(sc->doc->root, "jobs");
	int rc = bind_section(sc, sc->doc->root, "jobs", "jobs", job_keys, N_OF(job_keys),
			      NULL, &sc->jobs, d);
	if (rc != 0)
		return rc;
	if (sc->n_nodes == 0)
		return lsim_cfg_error(d, sc->doc, node, "jobs", LSIM_EINVAL,
				      "jobs run on the cluster's GPUs: give a cluster section");
	if (!lsim_job_scheduler_find(sc->jobs.scheduler))
		return lsim_cfg_error(d, sc->doc, lsim_node_get(node, "scheduler"),
				      "jobs.scheduler", LSIM_ENOENT,
				      "unknown job scheduler '%s' (known: %s)",
				      sc->jobs.scheduler, lsim_job_scheduler_names());
	if (!lsim_job_allocator_find(sc->jobs.allocator))
		return lsim_cfg_error(d, sc->doc, lsim_node_get(node, "allocator"),
				      "jobs.allocator", LSIM_ENOENT,
				      "unknown job allocator '%s' (known: %s)",
				      sc->jobs.allocator, lsim_job_allocator_names());
	sc->have_jobs = true;
	lsim_job_list_init(&sc->job_list);
	lsim_pool_spec_init(&sc->pool);
	int32_t gpus = 0;
	for (size_t i = 0; rc == 0 && i < sc->n_nodes; i++) {
		rc = lsim_pool_spec_add(&sc->pool, (int32_t)sc->nodes[i].count,
					(int32_t)sc->nodes[i].gpus_per_node, sc->nodes[i].gpu);
		gpus += (int32_t)(sc->nodes[i].count * sc->nodes[i].gpus_per_node);
	}
	/* the hardware of each pool type: its profile */
	size_t nt = rc == 0 ? (size_t)sc->pool.n_types : 0;
	sc->pool_profiles = calloc(nt ? nt : 1, sizeof *sc->pool_profiles);
	sc->pool_profile_ptrs = calloc(nt ? nt : 1, sizeof *sc->pool_profile_ptrs);
	if (rc == 0 && (!sc->pool_profiles || !sc->pool_profile_ptrs))
		rc = LSIM_ENOMEM;
	char *base = sc->top.data_dir[0] ? resolve(sc, sc->top.data_dir)
					 : strdup(lsim_data_dir());
	char profiles[1024];
	snprintf(profiles, sizeof profiles, "%s/profiles", base ? base : ".");
	free(base);
	for (size_t t = 0; rc == 0 && t < nt; t++) {
		rc = lsim_gpu_profile_load(profiles, sc->pool.types[t], &sc->pool_profiles[t], d);
		sc->pool_profile_ptrs[t] = &sc->pool_profiles[t];
	}
	if (rc == 0 && sc->jobs.quotas[0])
		rc = parse_quotas(sc, node, d);
	char *path = rc == 0 ? resolve(sc, sc->jobs.path) : NULL;
	if (rc == 0 && !path)
		rc = LSIM_ENOMEM;
	if (rc == 0) {
		if (sc->jobs.source == JOBS_STATS) {
			struct lsim_cluster_stats st;
			struct lsim_job_gen_params gp;
			lsim_job_gen_defaults(&gp);
			gp.seed = lsim_stream_seed((uint64_t)sc->top.seed, 0, LSIM_STREAM_JOBS);
			gp.count = (size_t)sc->jobs.count;
			gp.load = sc->jobs.load;
			gp.capacity_gpus = gpus;
			gp.mean_gpus = sc->jobs.mean_gpus;
			gp.ckpt_interval = sc->jobs.ckpt_interval;
			rc = lsim_jobs_read_cluster_stats(path, sc->jobs.cluster_name, &st, d);
			if (rc == 0)
				rc = lsim_jobs_gen_stats(&st, &gp, &sc->job_list, d);
		} else if (sc->jobs.source == JOBS_CSV) {
			rc = lsim_jobs_read_csv(path, &sc->job_list, d);
		} else if (sc->jobs.source == JOBS_ALIBABA) {
			rc = lsim_jobs_read_alibaba_pods(path, 0, &sc->job_list, d);
		} else {
			struct lsim_job_gen_params gp;
			lsim_job_gen_defaults(&gp);
			gp.seed = lsim_stream_seed((uint64_t)sc->top.seed, 0, LSIM_STREAM_JOBS);
			gp.count = (size_t)sc->jobs.count;
			gp.load = sc->jobs.load;
			gp.capacity_gpus = gpus;
			gp.mean_gpus = sc->jobs.mean_gpus;
			gp.ckpt_interval = sc->jobs.ckpt_interval;
			rc = lsim_jobs_gen_empirical(path, &gp, &sc->job_list, d);
		}
		if (rc != 0 && d && !d->key[0])
			snprintf(d->key, sizeof d->key, "jobs.path");
	}
	free(path);
	return rc;
}

/* Starts the run's jobs on its engine: the GPUs the initial instances use
 * are lent to inference first. */
static int start_jobs(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (!sc->have_jobs)
		return 0;
	struct lsim_jobs_cfg c;
	lsim_jobs_cfg_defaults(&c);
	c.scheduler = sc->jobs.scheduler;
	c.allocator = sc->jobs.allocator;
	c.type_profiles = sc->pool_profile_ptrs;
	c.gpu = sc->pool.n_types > 0 ? &sc->pool_profiles[0] : NULL;
	c.efficiency = sc->jobs.efficiency;
	c.storage_bw = sc->jobs.storage_bw > 0 ? sc->jobs.storage_bw : sc->net.storage_bw;
	c.gpu_mtbf = sc->jobs.gpu_mtbf;
	c.seed = lsim_stream_seed((uint64_t)sc->top.seed, 0, LSIM_STREAM_JOBS);
	int rc = lsim_jobs_create(sc->sim.sv.eng, &sc->pool, &c, &sc->js, d);
	if (rc != 0) {
		if (d && !d->key[0])
			snprintf(d->key, sizeof d->key, "jobs");
		return rc;
	}
	if (sc->sim.sv.net && sc->jobs.traffic == 0) /* all-reduces and checkpoints as flows */
		lsim_jobs_use_links(sc->js, sc->sim.sv.net, &sc->sim.sv.topo);
	for (size_t i = 0; rc == 0 && i < sc->sim.n_inst; i++) {
		const struct lsim_instance *in = sc->sim.inst[i];
		for (int32_t st = 0; in->node >= 0 && rc == 0 && st < in->pp; st++)
			rc = lsim_jobs_reclaim(sc->js, in->stage_node ? in->stage_node[st] : in->node,
					       in->tp, NULL, NULL);
	}
	if (rc == 0)
		rc = lsim_jobs_submit_list(sc->js, &sc->job_list, d);
	return rc;
}

/* A row of /job_timeseries at every sample. */
/* The sim's check hook: the training jobs' invariants. */
static int check_jobs(void *ctx, char *why, size_t n)
{
	const struct lsim_scenario *sc = ctx;
	return sc->js ? lsim_jobs_check(sc->js, why, n) : 0;
}

static void sample_jobs(void *ctx, lsim_time now)
{
	struct lsim_scenario *sc = ctx;
	if (!sc->js)
		return;
	if (sc->n_job_ts == sc->cap_job_ts) {
		size_t c = sc->cap_job_ts ? 2 * sc->cap_job_ts : 256;
		struct lsim_job_sample *p = realloc(sc->job_ts, c * sizeof *p);
		if (!p)
			return; /* the series stops; the run goes on */
		sc->job_ts = p;
		sc->cap_job_ts = c;
	}
	struct lsim_jobs_occupancy o;
	lsim_jobs_occupancy(sc->js, &o);
	sc->job_ts[sc->n_job_ts++] = (struct lsim_job_sample){
		.t = lsim_time_to_s(now), .held = o.held, .lent = o.lent, .free = o.free,
		.pending = o.pending, .fragmented = o.fragmented};
}

/* /jobs and the job fields of the summary. */
static int job_results(struct lsim_scenario *sc)
{
	if (!sc->js)
		return 0;
	size_t n = 0;
	const struct lsim_job_record *rec = lsim_jobs_records(sc->js, &n);
	free(sc->job_rows);
	sc->job_rows = calloc(n ? n : 1, sizeof *sc->job_rows);
	if (!sc->job_rows)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct lsim_job_record *j = &rec[i];
		struct lsim_job_row *o = &sc->job_rows[i];
		o->id = j->id;
		o->tenant = j->tenant;
		o->status = j->status;
		o->gpus_peak = j->gpus_peak;
		o->restarts = j->restarts;
		o->failures = j->failures;
		o->preemptions = j->preemptions;
		o->resizes = j->resizes;
		o->iterations = j->iterations;
		o->lost_iterations = j->lost_iterations;
		o->arrival = j->arrival < 0 ? -1 : lsim_time_to_s(j->arrival);
		o->first_start = j->first_start < 0 ? -1 : lsim_time_to_s(j->first_start);
		o->finish = j->finish < 0 ? -1 : lsim_time_to_s(j->finish);
		o->queued_s = lsim_time_to_s(j->queued);
		o->alloc_gpu_s = j->alloc_gpu_s;
		o->useful_gpu_s = j->useful_gpu_s;
		o->lost_gpu_s = j->lost_gpu_s;
		o->overhead_gpu_s = j->overhead_gpu_s;
		o->cost_usd = j->cost;
		if (j->gpu_type >= 0 && j->gpu_type < sc->pool.n_types)
			o->energy_j = j->alloc_gpu_s * sc->pool_profiles[j->gpu_type].tdp_w *
				      sc->power.pue;
		sc->res.summary.jobs_energy_j += o->energy_j;
	}
	double frag = 0;
	size_t nf = 0;
	for (size_t k = 0; k < sc->n_job_ts; k++)
		if (sc->job_ts[k].free > 0) {
			frag += (double)sc->job_ts[k].fragmented / sc->job_ts[k].free;
			nf++;
		}
	sc->res.summary.job_fragmentation = nf ? frag / (double)nf : 0;
	sc->res.job_ts = sc->job_ts;
	sc->res.n_job_ts = sc->n_job_ts;
	size_t ne = 0;
	const struct lsim_job_event *ev = lsim_jobs_timeline(sc->js, &ne);
	free(sc->job_events);
	sc->job_events = calloc(ne ? ne : 1, sizeof *sc->job_events);
	if (!sc->job_events)
		return LSIM_ENOMEM;
	for (size_t k = 0; k < ne; k++)
		sc->job_events[k] = (struct lsim_job_event_row){
			.t = lsim_time_to_s(ev[k].t), .job = ev[k].job,
			.state = ev[k].state, .gpus = ev[k].gpus};
	sc->res.job_timeline = sc->job_events;
	sc->res.n_job_timeline = ne;
	sc->res.jobs = sc->job_rows;
	sc->res.n_jobs = n;
	struct lsim_jobs_summary js;
	int rc = lsim_jobs_summary(sc->js, &js);
	if (rc != 0)
		return rc;
	struct lsim_summary *s = &sc->res.summary;
	s->jobs = (double)js.n_jobs;
	s->jobs_finished = (double)js.n_finished;
	sc->jobs_unfinished = (double)js.n_unfinished;
	s->jobs_makespan_s = js.makespan_s;
	s->jct_mean_s = js.jct_mean_s;
	s->jct_p99_s = js.jct_p99_s;
	s->job_queue_mean_s = js.queue_mean_s;
	s->job_gpu_util = js.util_alloc;
	s->job_useful_util = js.util_useful;
	s->jobs_cost_usd = js.cost;
	return 0;
}

/* ---- the fleet at run time: the adaptor's scale-outs and scale-ins ---- */

static int spawn(void *ctx, int32_t g, struct lsim_instance **out,
		 struct lsim_diag *d)
{
	struct lsim_scenario *sc = ctx;
	const struct inst_cfg *ic = &sc->insts[g];
	int32_t pp = ic->eng.pp > 1 ? (int32_t)ic->eng.pp : 1;
	int32_t node[64], gpu_local[64]; /* per stage (pp <= 64) */
	if (sc->n_rt_nodes == 0)
		return make_instance(sc, (size_t)g, NULL, NULL, out, d);
	int rc = place_replica(sc, (size_t)g, -1, sc->rt_nodes, sc->rt_used,
			       sc->n_rt_nodes, node, gpu_local);
	if (rc == LSIM_EPLUGIN)
		return lsim_diag_set(d, rc, "", 0, 0, "allocator",
				     "allocator %s chose a node that does not fit",
				     sc->policies[LSIM_ROLE_ALLOCATOR]->type->name);
	if (rc != 0)
		return rc;
	for (int32_t st = 0; sc->js && st < pp; st++) /* training jobs there
							* checkpoint and make room */
		lsim_jobs_reclaim(sc->js, node[st], (int32_t)ic->tp, NULL, NULL);
	return make_instance(sc, (size_t)g, node, gpu_local, out, d);
}

static void stopped(void *ctx, const struct lsim_instance *in)
{
	struct lsim_scenario *sc = ctx;
	if (in->node < 0 || (size_t)in->node >= sc->n_rt_nodes)
		return;
	/* stage by stage; a node counted one instance per run of stages */
	for (int32_t st = 0; st < in->pp; st++) {
		int32_t node = in->stage_node ? in->stage_node[st] : in->node;
		int32_t g0 = in->stage_gpu0 ? in->stage_gpu0[st] : in->gpu0 + st * in->tp;
		bool first = st == 0 || !in->stage_node || in->stage_node[st - 1] != node;
		unplace(sc->rt_nodes, sc->rt_used, node, g0 - node * sc->gpus_per_node_max,
			in->tp, first);
		if (sc->js) /* training can use them again */
			lsim_jobs_give_back(sc->js, node, in->tp);
	}
}

static void node_failed(void *ctx, int32_t node)
{
	struct lsim_scenario *sc = ctx;
	if (node < 0 || (size_t)node >= sc->n_rt_nodes)
		return;
	sc->rt_nodes[node].gpus_free = 0;
	sc->rt_used[node] = ~0ULL;
}

/* The groups the adaptor scales, and the run's copy of the nodes. */
static int setup_fleet(struct lsim_scenario *sc)
{
	free(sc->groups);
	sc->groups = calloc(sc->n_insts, sizeof *sc->groups);
	if (!sc->groups)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		struct lsim_group *g = &sc->groups[i];
		g->min = (int32_t)min_replicas(ic);
		g->max = (int32_t)max_replicas(ic);
		if (ic->dp > 1) /* counted in instances, each rank one; never scaled
				 * (check_dp refuses min_replicas and max_replicas) */
			g->min = g->max = (int32_t)(ic->replicas * ic->dp);
		g->capacity_rps = ic->capacity_rps;
		g->provision = ic->provision_time;
		g->engine_init = ic->engine_init;
		/* uncontended: weights per GPU over the storage link */
		double bytes = ic->perf == PERF_SERVICE ? 0
			: lsim_model_weight_bytes(&sc->models[i]) / (double)replica_gpus(ic);
		g->start_lead = ic->provision_time + ic->engine_init +
				(lsim_time)llround(bytes / sc->net.storage_bw * 1e9);
	}
	sc->sim.mtbf = sc->fail.mtbf;
	sc->sim.gpu_mtbf = sc->fail.gpu_mtbf;
	sc->sim.coord_mtbf = sc->fail.coordinator_mtbf;
	sc->sim.fail_weibull = sc->fail.distribution == 1;
	sc->sim.fail_shape = sc->fail.shape;
	sc->sim.replace_failed = sc->fail.replace;
	sc->sim.spot_mtbr = sc->fail.spot_mtbr;
	sc->sim.node_mtbf = sc->fail.node_mtbf;
	sc->sim.n_nodes = (int32_t)sc->n_rt_nodes;
	sc->sim.spot_warning = sc->fail.spot_warning;
	sc->sim.trace_fail_t = sc->fail_t;
	sc->sim.trace_fail_inst = sc->fail_inst;
	sc->sim.n_trace_fail = sc->n_fail;
	sc->sim.groups = sc->groups;
	sc->sim.n_groups = sc->n_insts;
	sc->sim.load_bw = sc->net.storage_bw;
	sc->sim.fleet = (struct lsim_fleet_ops){.spawn = spawn, .stopped = stopped,
						.node_failed = node_failed, .ctx = sc};
	free(sc->rt_nodes);
	free(sc->rt_used);
	sc->rt_nodes = NULL;
	sc->rt_used = NULL;
	if (sc->n_rt_nodes == 0)
		return 0;
	sc->rt_nodes = malloc(sc->n_rt_nodes * sizeof *sc->rt_nodes);
	sc->rt_used = malloc(sc->n_rt_nodes * sizeof *sc->rt_used);
	if (!sc->rt_nodes || !sc->rt_used)
		return LSIM_ENOMEM;
	memcpy(sc->rt_nodes, sc->nodes_init, sc->n_rt_nodes * sizeof *sc->rt_nodes);
	memcpy(sc->rt_used, sc->used_init, sc->n_rt_nodes * sizeof *sc->rt_used);
	return 0;
}

struct progress_bridge {
	lsim_progress_fn fn;
	void *ctx;
};

static void progress_hook(void *ctx, const struct lsim_sim *s, lsim_time now)
{
	struct progress_bridge *b = ctx;
	b->fn(b->ctx, lsim_time_to_s(now), s->n_done, s->n_reqs);
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
	sc->sim.sv.pue = sc->power.pue;
	sc->sim.sv.power_alpha = sc->power.alpha;
	sc->sim.sv.carbon_g_per_kwh = sc->power.carbon_intensity;
	sc->sim.sv.carbon = sc->carbon;
	sc->sim.zero_output = sc->wl.zero_output;
	sc->sim.skip_bad_lines = sc->wl.on_error == 1;
	sc->sim.sample_period = sc->output.sample_period;
	sc->sim.sv.macro_steps = sc->top.macro_steps;
	sc->sim.records_in_memory = (size_t)sc->output.records_in_memory;
	rc = build_network(sc, d);
	if (rc == 0)
		rc = setup_fleet(sc);
	if (rc == 0)
		rc = build_instances(sc, d);
	if (rc == 0)
		rc = start_jobs(sc, d);
	sc->sim.has_jobs = sc->have_jobs;
	sc->n_job_ts = 0;
	if (sc->have_jobs) {
		sc->sim.sample_hook = sample_jobs;
		sc->sim.sample_hook_ctx = sc;
		sc->sim.check_hook = check_jobs;
		sc->sim.check_hook_ctx = sc;
	}
	if (rc == 0 && sc->n_insts > 0) /* jobs alone need no request workload */
		rc = open_workload(sc, rngs, w, d);
	return rc != 0 ? locate_key(sc, d, rc) : 0;
}

int lsim_scenario_check(struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct run_rngs rngs = {0};
	struct lsim_workload *w = NULL;
	int rc = assemble(sc, &rngs, &w, d);
	lsim_workload_destroy(w);
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
		if (rc != 0 && !d->file[0] && !strcmp(d->key, "output.sample_period")) {
			const struct lsim_node *n = lsim_node_get(
				lsim_node_get(sc->doc->root, "output"), "sample_period");
			char msg[sizeof d->msg];
			snprintf(msg, sizeof msg, "%s", d->msg);
			lsim_cfg_error(d, sc->doc, n, "output.sample_period", rc, "%s", msg);
		}
	} else {
		lsim_workload_destroy(w);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc == 0) {
		sc->hit_limit = sc->top.duration > 0 &&
				lsim_now(sc->sim.sv.eng) >= sc->top.duration;
		sc->serving = 0;
		sc->jobs_unfinished = 0; /* job_results sets it */
		for (size_t i = 0; i < sc->sim.n_inst; i++)
			sc->serving += sc->sim.inst[i]->state != LSIM_INST_STOPPED &&
				       !sc->sim.inst[i]->failed;
	}
	sc->sim.progress = NULL;
	if (rc == 0)
		rc = lsim_sim_results(&sc->sim, &sc->res,
				      &sc->rec_insts, &sc->rec_classes);
	if (rc == 0)
		rc = job_results(sc);
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
		{"workload.models[] (models by share)", model_share_keys, N_OF(model_share_keys)},
		{"power", power_keys, N_OF(power_keys)},
		{"output", output_keys, N_OF(output_keys)},
		{"network (the cluster's links)", net_keys, N_OF(net_keys)},
		{"background[] (host-GPU copy streams)", bg_keys, N_OF(bg_keys)},
		{"failures", fail_keys, N_OF(fail_keys)},
		{"jobs (training and fine-tuning)", job_keys, N_OF(job_keys)},
	};
	for (size_t i = 0; i < N_OF(secs); i++) {
		lsim_buf_printf(b, "\n### %s\n\n| key | type | default | bounds | meaning |\n|---|---|---|---|---|\n",
				secs[i].title);
		lsim_cfg_doc(b, secs[i].keys, secs[i].n);
	}
}

int lsim_scenario_longer(const struct lsim_scenario *sc, int64_t factor,
			 char sets[][64], size_t *n)
{
	*n = 0;
	const struct wl_cfg *w = &sc->wl;
	if (sc->top.duration > 0) /* a run cut at a time: cut it later */
		snprintf(sets[(*n)++], 64, "duration=%.9gs",
			 lsim_time_to_s(sc->top.duration) * (double)factor);
	if (w->kind != WL_GENERATOR) {
		if (w->repeat > INT64_MAX / factor)
			return LSIM_ERANGE;
		snprintf(sets[(*n)++], 64, "workload.repeat=%lld",
			 (long long)(w->repeat * factor));
		return 0;
	}
	if (w->count > 0) {
		if (w->count > INT64_MAX / factor)
			return LSIM_ERANGE;
		snprintf(sets[(*n)++], 64, "workload.count=%lld", (long long)(w->count * factor));
	}
	if (w->duration > 0)
		snprintf(sets[(*n)++], 64, "workload.duration=%.9gs",
			 lsim_time_to_s(w->duration) * (double)factor);
	return 0;
}
