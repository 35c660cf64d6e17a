#!/usr/bin/env python3
"""Derives the llmsim validate fixtures in this folder from the measured vLLM
run shipped in examples/data/vllm_runs/RTX4090/Llama-3.1-8B (LLMServingSim,
MIT; see the README there). Run from the repository root:
    python3 tests/data/validate/make_fixtures.py
Each fixture is the run with one change (README.md lists them)."""
import copy
import json
import os

SRC = "examples/data/vllm_runs/RTX4090/Llama-3.1-8B"
OUT = "tests/data/validate"

meta0 = json.load(open(os.path.join(SRC, "meta.json")))
lines = open(os.path.join(SRC, "requests.jsonl")).read().splitlines(keepends=True)


def write(name, meta, rows, one_node=True):
    # every fixture but one is a run on one node: all its data-parallel ranks are
    # local (vLLM's resolved data_parallel_size_local, which the shipped
    # dp-1 log has as 1)
    pc = meta.get("resolved_config", {}).get("parallel_config")
    if one_node and pc is not None and "data_parallel_size_local" in pc:
        pc["data_parallel_size_local"] = pc.get("data_parallel_size") or 1
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    with open(os.path.join(d, "requests.jsonl"), "w") as f:
        f.writelines(rows)


# max_model_len null (older run logs): the model's context
m = copy.deepcopy(meta0)
m["engine_kwargs"]["max_model_len"] = None
m["resolved_config"]["model_config"]["max_model_len"] = None
write("null_len", m, lines)

# no kv_cache block and no measured block count: the memory plan sizes the
# cache; max_model_len null as well
m = copy.deepcopy(meta0)
del m["kv_cache"]
m["resolved_config"]["cache_config"]["num_gpu_blocks"] = None
m["engine_kwargs"]["max_model_len"] = None
m["resolved_config"]["model_config"]["max_model_len"] = None
write("no_kv", m, lines)

# an older run log: no kv_cache block, no resolved_config, max_model_len
# null; prefix caching then follows the logged vllm_version's default
m = copy.deepcopy(meta0)
del m["kv_cache"]
del m["resolved_config"]
m["engine_kwargs"]["max_model_len"] = None
write("older", m, lines)

# tensor parallel 2 on RTX PRO 6000s (the device named as CUDA names it):
# the all-reduces take that profile's fabric; first 40 requests
m = copy.deepcopy(meta0)
m["engine_kwargs"]["tensor_parallel_size"] = 2
m["resolved_config"]["parallel_config"]["tensor_parallel_size"] = 2
m["hardware"]["device_count"] = 2
m["hardware"]["device_name"] = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
write("tp2_pro6000", m, lines[:40])

# data parallel 2 of a dense model: two independent ranks behind vLLM's
# DP load balancer; first 40 requests
m = copy.deepcopy(meta0)
m["engine_kwargs"]["data_parallel_size"] = 2
m["resolved_config"]["parallel_config"]["data_parallel_size"] = 2
write("data_parallel", m, lines[:40])

# expert parallelism on a dense model: no experts to split (vLLM ignores
# it); first 40 requests
m = copy.deepcopy(meta0)
m["engine_kwargs"]["enable_expert_parallel"] = True
m["resolved_config"]["parallel_config"]["enable_expert_parallel"] = True
write("expert_parallel_dense", m, lines[:40])

# data parallel 2 + expert parallel of an MoE model on RTX PRO 6000s, the
# shape of the motivating run (a fixture of the mechanism, not a
# measurement: the requests and latencies are the Llama RTX 4090 run's,
# the KV block count per rank too); first 40 requests
m = copy.deepcopy(meta0)
m["model"] = m["engine_kwargs"]["model"] = "Qwen/Qwen3-30B-A3B-Instruct-2507"
for k, v in (("data_parallel_size", 2), ("enable_expert_parallel", True)):
    m["engine_kwargs"][k] = v
    m["resolved_config"]["parallel_config"][k] = v
m["hardware"]["device_count"] = 2
m["hardware"]["device_name"] = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
write("dp2_ep_moe", m, lines[:40])

# the same with no measured block count: the memory plan sizes each rank's
# cache from its device memory (the RTX PRO 6000 profile's 96 GiB, as the
# log would give it) after its dense weights and 64 of the 128 experts
del m["kv_cache"]
m["resolved_config"]["cache_config"]["num_gpu_blocks"] = None
m["hardware"]["device_total_memory_bytes"] = 96 * 1024**3
write("dp2_ep_moe_no_kv", m, lines[:40])

# pipeline parallel 2 on RTX PRO 6000s: a synthetic fixture of the
# mechanism, not a measurement (the requests and the latencies are the
# RTX 4090 run's at pipeline_parallel_size 1, the KV block count too);
# first 40 requests
m = copy.deepcopy(meta0)
m["engine_kwargs"]["pipeline_parallel_size"] = 2
m["resolved_config"]["parallel_config"]["pipeline_parallel_size"] = 2
m["hardware"]["device_count"] = 2
m["hardware"]["device_name"] = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
write("pp2_pro6000", m, lines[:40])

# requests.jsonl out of queued_ts order: rows 5/6 and 100/101 swapped,
# rows 200 and 203 swapped (4 lines earlier than the line before them)
rows = list(lines)
for a, b in ((5, 6), (100, 101), (200, 203)):
    rows[a], rows[b] = rows[b], rows[a]
write("unsorted", meta0, rows)

# a published fine-tune's name: organisation, Meta- prefix, -Instruct tag
m = copy.deepcopy(meta0)
m["model"] = m["engine_kwargs"]["model"] = "meta-llama/Meta-Llama-3.1-8B-Instruct"
write("instruct", m, lines)

# inputs validate refuses (the bad-input catalogue): three requests each
small = lines[:3]
m = copy.deepcopy(meta0)
m["model"] = m["engine_kwargs"]["model"] = "meta-llama/Lama-3.1-8B"
write("bad/misspelled", m, small)

# data parallel 2 of an MoE model without expert parallelism: vLLM shards
# every expert over the 2 GPUs by tensor parallelism, which no table holds
m = copy.deepcopy(meta0)
m["model"] = m["engine_kwargs"]["model"] = "Qwen/Qwen3-30B-A3B-Instruct-2507"
m["engine_kwargs"]["data_parallel_size"] = 2
m["resolved_config"]["parallel_config"]["data_parallel_size"] = 2
m["hardware"]["device_name"] = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
write("bad/dp2_moe_no_ep", m, small)

# data parallel 2 + expert parallel through DeepEP's kernels: the dispatch
# and combine are modelled as vLLM's default all-gather and reduce-scatter
m = copy.deepcopy(meta0)
m["model"] = m["engine_kwargs"]["model"] = "Qwen/Qwen3-30B-A3B-Instruct-2507"
for k, v in (("data_parallel_size", 2), ("enable_expert_parallel", True),
             ("all2all_backend", "deepep_low_latency")):
    m["engine_kwargs"][k] = v
    m["resolved_config"]["parallel_config"][k] = v
m["hardware"]["device_name"] = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
write("bad/ep_deepep", m, small)

# no kv_cache, no resolved_config and no vllm_version: nothing says whether
# prefix caching was on, nor which vLLM's default would decide
m = copy.deepcopy(meta0)
del m["kv_cache"]
del m["resolved_config"]
del m["vllm_version"]
write("bad/no_prefix_caching", m, small)

# tensor parallel 2 on a device no profile names: the fabric is unknown
m = copy.deepcopy(meta0)
m["engine_kwargs"]["tensor_parallel_size"] = 2
m["resolved_config"]["parallel_config"]["tensor_parallel_size"] = 2
m["hardware"]["device_name"] = "NVIDIA Quux 9000"
write("bad/tp2_unknown_device", m, small)

# pipeline parallel 2 with data parallel 2: data-parallel ranks of
# pipelines are not modelled
m = copy.deepcopy(meta0)
for k in ("pipeline_parallel_size", "data_parallel_size"):
    m["engine_kwargs"][k] = 2
    m["resolved_config"]["parallel_config"][k] = 2
m["hardware"]["device_name"] = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
write("bad/dp2_pp2", m, small)

# no kv_cache block on a device of 100 TB: the memory plan would give 43
# million KV blocks, more than llmsim holds (LSIM_KV_BLOCKS_MAX)
m = copy.deepcopy(meta0)
del m["kv_cache"]
m["resolved_config"]["cache_config"]["num_gpu_blocks"] = None
m["hardware"]["device_total_memory_bytes"] = 100 * 10**12
write("bad/huge_memory", m, small)

# measured data validate refuses (issue 29): a wrong JSON type in meta.json,
# and request lines whose times are not finite, are null, or are out of the
# order a request lives them (its first token before it was queued)
m = copy.deepcopy(meta0)
m["model"] = [m["model"]]
write("bad/model_list", m, small)


def edit(row, key, text):
    """row with key's value replaced by the JSON text (NaN is not JSON)."""
    o = json.loads(row)
    o[key] = "@@"
    return json.dumps(o).replace('"@@"', text) + "\n"


write("bad/nan_first_token", meta0,
      [small[0], edit(small[1], "first_token_ts", "NaN"), small[2]])
write("bad/null_queued", meta0,
      [small[0], small[1], edit(small[2], "queued_ts", "null")])
q = json.loads(small[1])["queued_ts"]
write("bad/first_before_queued", meta0,
      [small[0], edit(small[1], "first_token_ts", "%.9f" % (q - 0.5)), small[2]])
write("bad/zero_output", meta0,
      [small[0], edit(small[1], "output_toks", "0"), small[2]])

# settings validate does not replay: refused naming the key, not replayed
# as if they were the defaults
m = copy.deepcopy(meta0)
m["model"] = m["engine_kwargs"]["model"] = "Qwen/Qwen3-30B-A3B-Instruct-2507"
for k, v in (("data_parallel_size", 2), ("enable_expert_parallel", True)):
    m["engine_kwargs"][k] = v
    m["resolved_config"]["parallel_config"][k] = v
m["hardware"]["device_name"] = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
moe = m
m = copy.deepcopy(moe)
m["resolved_config"]["parallel_config"]["enable_eplb"] = True
write("bad/eplb", m, small)

m = copy.deepcopy(meta0)
m["resolved_config"]["cache_config"]["cache_dtype"] = "fp8_e4m3"
write("bad/fp8_kv", m, small)

# engine_kwargs and resolved_config disagree: the log does not say what ran
m = copy.deepcopy(moe)
m["resolved_config"]["parallel_config"]["data_parallel_size"] = 4
write("bad/disagree", m, small)

# expert parallel with no all2all_backend logged by a vLLM whose default
# is not known to be the modelled allgather_reducescatter
m = copy.deepcopy(moe)
del m["resolved_config"]["parallel_config"]["all2all_backend"]
m["vllm_version"] = "0.10.1"
write("bad/ep_backend_unstated", m, small)

# data parallel 2 with one rank on this node: the ranks spanned two nodes
m = copy.deepcopy(moe)
m["resolved_config"]["parallel_config"]["data_parallel_size_local"] = 1
write("bad/multinode_dp", m, small, one_node=False)

# every prefill chunk capped (long_prefill_token_threshold), and weights
# offloaded as newer logs say it (the UVA offload config's repr)
m = copy.deepcopy(meta0)
m["resolved_config"]["scheduler_config"]["long_prefill_token_threshold"] = 256
write("bad/long_prefill", m, small)
m = copy.deepcopy(meta0)
m["resolved_config"]["offload_config"]["uva"] = (
    "UVAOffloadConfig(cpu_offload_gb=10.0, cpu_offload_params=set())")
write("bad/uva_offload", m, small)
