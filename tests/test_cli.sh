#!/usr/bin/env bash
# test_cli.sh - the command line end to end: help and version, `check`,
# bad input (exit 2, message naming file, line and key, no report left
# behind), `run` outputs, --set and --seed, determinism (byte-identical
# CSV and HDF5 for the same seed), the warning about unfinished requests,
# and the golden summary of small.yaml.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
scen=$src/tests/data/scenarios
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }

# expect_fail NAME FILE FRAGMENT...: exit code 2 and every fragment in stderr
expect_fail() {
	local name=$1 file=$2; shift 2
	local out rc
	out=$("$exe" run "$file" -o "$tmp/fail_$name" 2>&1 >/dev/null); rc=$?
	[ "$rc" -eq 2 ] || { bad "$name: exit $rc, want 2 ($out)"; return; }
	for frag in "$@"; do
		case "$out" in *"$frag"*) ;; *) bad "$name: '$frag' not in: $out"; return;; esac
	done
	[ ! -e "$tmp/fail_$name/report.h5" ] || { bad "$name: report.h5 written"; return; }
	ok "$name"
}

"$exe" --version | grep -q '^llmsim [0-9]' && ok version || bad version
"$exe" --help | grep -q 'validate RUN_DIR' && ok help || bad help
"$exe" run --help | grep -q -- '--set key=value' && ok "run --help" || bad "run --help"
for c in check validate trace policies keys profile; do
	"$exe" $c --help | grep -q "^usage: llmsim $c" && ok "$c --help" || bad "$c --help"
done
"$exe" policies scheduler | grep -q 'power_of_two .*\[scheduler.router\]' && ok "policies scheduler" || bad "policies scheduler"
"$exe" policies profiler | grep -q 'quantile *default 0.5' && ok "policies profiler params" || bad "policies profiler params"
"$exe" policies nonsense >/dev/null 2>&1; [ $? -eq 2 ] && ok "policies unknown kind" || bad "policies unknown kind"
"$exe" frobnicate >/dev/null 2>&1; [ $? -eq 2 ] && ok "unknown command" || bad "unknown command"
"$exe" profile import --help | grep -q "usage" && "$exe" profile compare --help | grep -q "usage" \
	&& ok "profile import/compare --help" || bad "profile import/compare --help"
"$exe" profile frobnicate >/dev/null 2>&1; [ $? -eq 2 ] && ok "unknown profile command" || bad "unknown profile command"
# profile collective: a group larger than the fabric and an unknown op are refused (exit 2,
# nothing on stdout); a 2-GPU PCIe Gen5 all-reduce of 64 MiB is 8.4 + 2 x 5.7 us + 64 MiB / 48 GB/s
out=$("$exe" profile collective --gpu MI300X --n 9 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && case "$out" in *"--n: 9 GPUs do not fit MI300X's fabric (mesh)"*) true;; *) false;; esac \
	&& [ -z "$("$exe" profile collective --gpu MI300X --n 9 2>/dev/null)" ] \
	&& ok "profile collective: group too large" || bad "profile collective: group too large ($rc: $out)"
"$exe" profile collective --gpu H100-SXM --op bogus >/dev/null 2>&1; [ $? -eq 2 ] \
	&& ok "profile collective: unknown op" || bad "profile collective: unknown op"
t=$("$exe" profile collective --gpu RTX-PRO-6000 --n 2 --bytes 64MiB | awk -F'\t' 'NR == 2 { print $6, $7, $8 }')
[ "$t" = "ring Simple 1417.90" ] && ok "profile collective: PCIe all-reduce" || bad "profile collective: PCIe all-reduce ($t)"

out=$("$exe" check "$src/examples/quickstart.yaml") && echo "$out" | grep -q '    replicas: 4' \
	&& ok "check quickstart" || bad "check quickstart: $out"
out=$("$exe" check "$scen/small.yaml" --set instances.0.replicas=1 2>&1)
echo "$out" | grep -q '    replicas: 1' && ok "check --set" || bad "check --set: $out"

expect_fail unknown-key "$scen/bad_key.yaml" "bad_key.yaml:4:" "instances[0].replicsa" "did you mean 'replicas'"
expect_fail bad-unit "$scen/bad_unit.yaml" "bad_unit.yaml:4:" "instances[0].cpu_overhead" "time unit"
expect_fail bad-gpu "$scen/bad_gpu.yaml" "bad_gpu.yaml:3:" "instances[0].gpu" "H100-SXMX"
expect_fail bad-model "$scen/bad_model.yaml" "bad_model.yaml:4:" "instances[0].model" "Llama-3.1-8B"
expect_fail bad-placement "$scen/bad_placement.yaml" "bad_placement.yaml:" "instances[0].replicas" "replica 3"
expect_fail bad-syntax "$scen/bad_syntax.yaml" "bad_syntax.yaml:"
expect_fail bad-range "$scen/bad_range.yaml" "bad_range.yaml:4:" "gpu_memory_utilization"
expect_fail bad-trace "$scen/bad_trace.yaml" "bad_tokens.csv:4" "prompt"
# check reads the trace's lines as the run does: the same refusal, and
# none when the run would skip the line
out=$("$exe" check "$scen/bad_trace.yaml" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && case "$out" in *"bad_tokens.csv:4"*prompt*) true ;; *) false ;; esac &&
	ok "check reads the trace: bad line refused" || bad "check bad trace: exit $rc: $out"
"$exe" check "$scen/bad_trace.yaml" --set workload.on_error=skip >/dev/null 2>"$tmp/err" &&
	ok "check reads the trace: on_error skip" || bad "check bad trace, skip: $(cat "$tmp/err")"
"$exe" run "$scen/small.yaml" -o "$tmp/x" --set workload.rate=fast >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'workload.rate' "$tmp/err" && ok "bad --set value" || bad "bad --set value: $(cat "$tmp/err")"

# docs/config.md is the output of `llmsim keys` below its "## Keys" heading
if diff <("$exe" keys) <(sed -n '/^## Keys$/,$p' "$src/docs/config.md" | tail -n +2) >/dev/null; then
	ok "docs/config.md matches llmsim keys"
else
	bad "docs/config.md is stale: run scripts/update-config-doc"
fi

# validate --json: one object with every metric
out=$("$exe" validate "$src/examples/data/vllm_runs/RTX4090/Llama-3.1-8B" \
	--profile "$src/calibrate/perf/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16" --json 2>&1)
n=$(echo "$out" | grep -o '"\(ttft\|tpot\|e2e\)_\(mean\|p50\|p90\|p95\|p99\)": {"real"' | wc -l)
[ "$n" -eq 15 ] && ok "validate --json" || bad "validate --json: $out"
"$exe" validate /nonexistent --profile /nonexistent >/dev/null 2>&1; rc=$?
[ $rc -ne 0 ] && ok "validate on a missing run fails" || bad "validate on a missing run succeeded"

# llmsim trace: format detection, stats and conversion
fmt=$src/tests/data/formats
for pair in burstgpt.csv:burstgpt burstgpt_v3.csv:burstgpt vidur.csv:vidur \
	    splitwise.csv:splitwise mooncake.csv:mooncake-csv azure2024.csv:azure-llm; do
	f=${pair%%:*}; want=${pair#*:}
	out=$("$exe" trace stats "$fmt/$f" --json 2>&1)
	case "$out" in *"\"format\": \"$want\""*) ok "detect $f";; *) bad "detect $f: $out";; esac
done
out=$("$exe" trace stats "$fmt/vidur.csv" --json)
case "$out" in *'"rows": 3, "span_s": 0.750000'*'"prompt_tokens": {"mean": 597.333, "p50": 512.0'*) ok "trace stats values";; *) bad "trace stats values: $out";; esac
# per tenant: by a column (BurstGPT Model: ChatGPT rows at 5 s and 45 s,
# prompts 472 and 1087), and by file (several files merged)
out=$("$exe" trace stats "$fmt/burstgpt.csv" --by Model --json)
case "$out" in *'"rows": 3,'*'"tenants": [{"tenant": "ChatGPT", "rows": 2, "span_s": 40.000000,'*'"prompt_tokens": {"mean": 779.500,'*'{"tenant": "GPT-4", "rows": 1,'*) ok "trace stats per tenant (--by)";; *) bad "trace stats --by: $out";; esac
out=$("$exe" trace stats "$fmt/burstgpt.csv" "$fmt/vidur.csv" --json)
case "$out" in *'"format": "mixed", "rows": 6,'*'"tenant": "'*'burstgpt.csv", "rows": 3,'*'vidur.csv", "rows": 3, "span_s": 0.750000'*) ok "trace stats per file";; *) bad "trace stats per file: $out";; esac
"$exe" trace stats "$fmt/burstgpt.csv" --by Nope >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "burstgpt.csv:1: --by: no column 'Nope'" "$tmp/err" && ok "trace stats --by unknown column" || bad "--by Nope: rc=$rc $(cat "$tmp/err")"
"$exe" trace stats "$fmt/unknown.csv" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q 'unknown.csv:1: workload.path: unrecognised trace header' "$tmp/err" \
	&& ok "unknown trace format" || bad "unknown trace format: $(cat "$tmp/err")"
out=$("$exe" trace stats "$src/examples/data/azure_llm_2023/AzureLLMInferenceTrace_conv_1815-1845.csv" --json)
case "$out" in *'"rows": 9754, "span_s": 1753.257140'*) ok "azure stats";; *) bad "azure stats: $out";; esac
"$exe" trace convert "$src/examples/data/vllm_runs/RTX4090/Llama-3.1-8B/requests.jsonl" -o "$tmp/conv.csv" >/dev/null &&
	sed -n 3p "$tmp/conv.csv" | grep -qx '0.386902482,1034,769,' && ok "trace convert exact" || bad "trace convert exact"
a=$("$exe" trace stats "$src/examples/data/vllm_runs/RTX4090/Llama-3.1-8B/requests.jsonl" --json | sed 's/"format": "[a-z-]*", //')
b=$("$exe" trace stats "$tmp/conv.csv" --json | sed 's/"format": "[a-z-]*", //')
[ "$a" = "$b" ] && ok "convert round trip keeps the statistics" || bad "round trip: $a vs $b"

# on_error: skip counts the bad line and goes on
"$exe" run "$scen/bad_trace.yaml" -o "$tmp/skip" --csv --quiet --set workload.on_error=skip >/dev/null 2>&1 &&
	grep -qx 'trace_lines_skipped,1,' "$tmp/skip/summary.csv" && grep -qx 'completed,2,' "$tmp/skip/summary.csv" \
	&& ok "on_error: skip" || bad "on_error: skip"
# shaping: a window, halved times and two passes of the same trace
"$exe" run "$scen/bad_trace.yaml" -o "$tmp/shape" --csv --quiet --set workload.on_error=skip \
	--set workload.time_scale=0.5 --set workload.repeat=2 >/dev/null 2>&1 &&
	[ "$(cut -d, -f2 "$tmp/shape/requests.csv" | tail -n +2 | tr '\n' ' ')" = "0 0.25 0.5 0.75 " ] \
	&& ok "shaping: time_scale and repeat" || bad "shaping: $(cut -d, -f2 "$tmp/shape/requests.csv" | tr '\n' ' ')"
# rate_scale 2: the trace overlaid with a copy shifted by half its mean gap
# (vidur.csv: arrivals 0, .25, .75 s; mean gap .375 s; shift .1875 s)
printf 'name: rs\ninstances: [{gpu: H100-SXM}]\nworkload: {kind: auto, path: %s, rate_scale: 2}\n' \
	"$fmt/vidur.csv" > "$tmp/rs.yaml"
"$exe" run "$tmp/rs.yaml" -o "$tmp/rs" --csv --quiet >/dev/null 2>&1
[ "$(tail -n +2 "$tmp/rs/requests.csv" | cut -d, -f2 | tr '\n' ' ')" = "0 0.1875 0.25 0.4375 0.75 0.9375 " ] \
	&& ok "rate_scale superposes shifted copies" || bad "rate_scale: $(cut -d, -f2 "$tmp/rs/requests.csv" | tr '\n' ' ')"
"$exe" run "$scen/small.yaml" -o "$tmp/x" --set workload.repeat=2 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'workload.kind' "$tmp/err" && ok "shaping a generator is refused" || bad "shaping a generator: $(cat "$tmp/err")"

# lengths_from: a generator drawing (prompt, output) pairs from a real trace
run_dir=$src/examples/data/vllm_runs/RTX4090/Llama-3.1-8B
printf 'name: lf\ninstances: [{gpu: H100-SXM}]\nworkload: {rate: 5, count: 100, lengths_from: %s/requests.jsonl}\n' \
	"$run_dir" > "$tmp/lf.yaml"
"$exe" run "$tmp/lf.yaml" -o "$tmp/lf" --csv --quiet >/dev/null 2>&1
"$exe" trace convert "$run_dir/requests.jsonl" -o "$tmp/pairs.csv" >/dev/null
missing=$(tail -n +2 "$tmp/lf/requests.csv" | cut -d, -f6,7 | sort -u |
	grep -vxF -f <(tail -n +2 "$tmp/pairs.csv" | cut -d, -f2,3) | wc -l)
rows=$(($(wc -l < "$tmp/lf/requests.csv") - 1))
[ "$rows" -eq 100 ] && [ "$missing" -eq 0 ] && ok "lengths_from draws real pairs" || bad "lengths_from: $rows rows, $missing pairs not in the trace"

# workload.traces: two traces merged as tenants 0 and 1, in arrival order
printf 'name: ten\ninstances: [{gpu: H100-SXM, replicas: 2}]\nworkload:\n  kind: auto\n  traces: [%s, %s]\n' \
	"$run_dir/requests.jsonl" "$fmt/vidur.csv" > "$tmp/ten.yaml"
"$exe" run "$tmp/ten.yaml" -o "$tmp/ten" --csv --quiet >/dev/null 2>&1
t0=$(awk -F, 'NR>1 && $15==0' "$tmp/ten/requests.csv" | wc -l)
t1=$(awk -F, 'NR>1 && $15==1' "$tmp/ten/requests.csv" | wc -l)
sorted=$(tail -n +2 "$tmp/ten/requests.csv" | cut -d, -f2 | sort -g -c 2>&1 && echo yes)
[ "$t0" -eq 300 ] && [ "$t1" -eq 3 ] && [ "$sorted" = yes ] && "$exe" check "$tmp/ten.yaml" | grep -q 'vidur.csv' \
	&& ok "traces merged as tenants" || bad "tenants: $t0 + $t1, sorted=$sorted"

# workload.class_column: QoS class named by a trace column (BurstGPT's Model)
printf 'name: cc\ninstances: [{gpu: H100-SXM}]\nclasses:\n  - {name: ChatGPT, share: 0.5}\n  - {name: GPT-4, share: 0.5}\nworkload: {kind: auto, path: %s, class_column: Model}\n' \
	"$fmt/burstgpt.csv" > "$tmp/cc.yaml"
"$exe" run "$tmp/cc.yaml" -o "$tmp/cc" --csv --quiet >/dev/null 2>&1
[ "$(tail -n +2 "$tmp/cc/requests.csv" | cut -d, -f11 | tr '\n' ' ')" = "0 0 1 " ] \
	&& ok "class_column assigns classes" || bad "class_column: $(cut -d, -f11 "$tmp/cc/requests.csv" | tr '\n' ' ')"
sed 's/GPT-4, share/GPT4, share/' "$tmp/cc.yaml" > "$tmp/cc2.yaml"
"$exe" run "$tmp/cc2.yaml" -o "$tmp/cc2" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "workload.class_column: request 2 names class 'GPT-4'" "$tmp/err" && [ ! -e "$tmp/cc2/report.h5" ] \
	&& ok "unknown class in the trace" || bad "unknown class: rc=$rc $(cat "$tmp/err")"

# a trace request longer than its model's context: an error naming file,
# line and column (BurstGPT line 3: 1087 + 0 -> 1 tokens > 1000), or skipped
printf 'name: ctx\ninstances: [{gpu: H100-SXM, max_model_len: 1000}]\nworkload: {kind: auto, path: %s}\n' \
	"$fmt/burstgpt.csv" > "$tmp/ctx.yaml"
"$exe" run "$tmp/ctx.yaml" -o "$tmp/ctx" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "burstgpt.csv:3:.*Request tokens: prompt 1087 + output 1 tokens exceed the context of the model's instances (1000 tokens" "$tmp/err" \
	&& [ ! -e "$tmp/ctx/report.h5" ] && ok "request beyond the model's context" || bad "context: rc=$rc $(cat "$tmp/err")"
"$exe" run "$tmp/ctx.yaml" -o "$tmp/ctx2" --csv --quiet --set workload.on_error=skip >/dev/null 2>"$tmp/err" || bad "context skip run: $(cat "$tmp/err")"
[ "$(grep '^requests,' "$tmp/ctx2/summary.csv")/$(grep '^trace_lines_skipped,' "$tmp/ctx2/summary.csv")" = "requests,2,/trace_lines_skipped,1," ] \
	&& ok "requests beyond the context skipped and counted" || bad "context skip: $(head -3 "$tmp/ctx2/summary.csv")"

# models and tenants by trace column: requests go only to instances of
# their model (by model name or group name); tenants numbered by first
# appearance, names in labels.csv
printf 'arrival_s,prompt_tokens,output_tokens,model,user\n0,100,5,Llama-3.1-70B,bob\n0.1,100,5,small,alice\n0.2,100,5,Llama-3.1-8B,bob\n0.3,100,5,big,carol\n' > "$tmp/mm.csv"
printf 'name: mm\ninstances:\n  - {name: small, model: Llama-3.1-8B, gpu: H100-SXM, replicas: 2}\n  - {name: big, model: Llama-3.1-70B, gpu: H100-SXM, tp: 4}\nworkload: {kind: auto, path: %s, model_column: model, tenant_column: user}\n' \
	"$tmp/mm.csv" > "$tmp/mm.yaml"
"$exe" run "$tmp/mm.yaml" -o "$tmp/mm" --csv --quiet >/dev/null 2>"$tmp/err" || bad "model_column run: $(cat "$tmp/err")"
got=$(tail -n +2 "$tmp/mm/requests.csv" | cut -d, -f8,15,16 | tr '\n' ' ')
[ "$got" = "2,0,1 0,1,0 1,0,0 2,2,1 " ] && grep -q '^model,1,Llama-3.1-70B$' "$tmp/mm/labels.csv" \
	&& grep -q '^tenant,2,carol$' "$tmp/mm/labels.csv" \
	&& ok "model_column routes to the model's instances; tenant_column names tenants" || bad "model/tenant column: $got"
# per-tenant cost by tokens of completed requests: bob 2 x 105, alice 105,
# carol 105 of 420 tokens
tc=$(grep '^cost_usd,' "$tmp/mm/summary.csv" | cut -d, -f2)
awk -F, -v c="$tc" 'NR > 1 { share[$2] = $6 } END { d = share["bob"] - c / 2; e = share["alice"] - c / 4
	if (d < 0) d = -d; if (e < 0) e = -e; exit !(NR == 4 && d < 1e-12 * c && e < 1e-12 * c) }' "$tmp/mm/tenants.csv" \
	&& ok "per-tenant cost in proportion to tokens" || bad "tenants: $(cat "$tmp/mm/tenants.csv")"
sed 's/^0.3,100,5,big/0.3,100,5,GPT-4/' "$tmp/mm.csv" > "$tmp/mm2.csv"
sed "s|$tmp/mm.csv|$tmp/mm2.csv|" "$tmp/mm.yaml" > "$tmp/mm2.yaml"
"$exe" run "$tmp/mm2.yaml" -o "$tmp/mm2" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "workload.model_column: request 3 names model 'GPT-4', which no instance group serves" "$tmp/err" \
	&& ok "unknown model in the trace" || bad "unknown model: rc=$rc $(cat "$tmp/err")"
# generic JSONL: the scenario names the keys (and their time unit)
printf '{"t_ms": 1000, "in": 50, "out": 4, "who": "x"}\n{"t_ms": 1250.5, "in": 60, "out": 2, "who": 7}\n' > "$tmp/g.jsonl"
printf 'name: gj\ninstances: [{gpu: H100-SXM}]\nworkload: {kind: jsonl, path: %s, arrival_column: t_ms, time_format: milliseconds, prompt_column: in, output_column: out, tenant_column: who}\n' \
	"$tmp/g.jsonl" > "$tmp/gj.yaml"
"$exe" run "$tmp/gj.yaml" -o "$tmp/gj" --csv --quiet >/dev/null 2>"$tmp/err" || bad "generic jsonl run: $(cat "$tmp/err")"
got=$(tail -n +2 "$tmp/gj/requests.csv" | cut -d, -f2,6,7,15 | tr '\n' ' ')
[ "$got" = "0,50,4,0 0.2505,60,2,1 " ] && grep -q '^tenant,1,7$' "$tmp/gj/labels.csv" \
	&& ok "generic JSONL with a key mapping" || bad "generic jsonl: $got"
sed 's/, output_column: out//' "$tmp/gj.yaml" > "$tmp/gj2.yaml"
"$exe" run "$tmp/gj2.yaml" -o "$tmp/gj2" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "workload.output_column: a JSONL key mapping needs" "$tmp/err" \
	&& ok "partial JSONL mapping" || bad "partial jsonl mapping: rc=$rc $(cat "$tmp/err")"

# models by share: 400 requests, 3/4 to the 70B group (binomial sd 8.7)
printf 'name: ms\ninstances:\n  - {name: small, model: Llama-3.1-8B, gpu: H100-SXM}\n  - {name: big, model: Llama-3.1-70B, gpu: H100-SXM, tp: 4}\nworkload:\n  count: 400\n  rate: 5\n  models: [{name: small, share: 0.25}, {name: Llama-3.1-70B, share: 0.75}]\n' > "$tmp/ms.yaml"
"$exe" run "$tmp/ms.yaml" -o "$tmp/ms" --csv --quiet >/dev/null 2>"$tmp/err" || bad "models by share run: $(cat "$tmp/err")"
big=$(tail -n +2 "$tmp/ms/requests.csv" | awk -F, '$16 == 1' | wc -l)
mism=$(tail -n +2 "$tmp/ms/requests.csv" | awk -F, '$8 != $16' | wc -l)
[ "$big" -ge 270 ] && [ "$big" -le 330 ] && [ "$mism" -eq 0 ] \
	&& ok "models by share: $big of 400 to the 70B model, each on its model's instance" || bad "models by share: big=$big mismatched=$mism"
sed 's/share: 0.75/share: 0.7/' "$tmp/ms.yaml" > "$tmp/ms2.yaml"
"$exe" run "$tmp/ms2.yaml" -o "$tmp/ms2" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "workload.models: the shares add up to 0.95, not 1" "$tmp/err" \
	&& ok "model shares must add up to 1" || bad "model shares: rc=$rc $(cat "$tmp/err")"

# cold start: Llama-3.1-8B weights (8.03e9 params x 2 bytes = 16.06 GB) from
# storage at 10 GB/s over storage, ToR, NIC, host and PCIe links (latency
# 100 + 1 + 2 + 0.5 + 1 us), then engine_init 5 s: ready at 6.6061045 s;
# requests that arrive meanwhile wait for it. Two replicas share the
# storage link: 5 + 0.0001045 + 3.212 s.
printf 'name: cold\ncluster: [{gpu: H100-SXM, count: 1, gpus_per_node: 8}]\nnetwork: {storage_bw: 10GB/s, messages: false}\ninstances:\n  - {model: Llama-3.1-8B, gpu: H100-SXM, cold_start: true, engine_init: 5s}\nworkload: {count: 3, rate: 100}\n' > "$tmp/cold.yaml"
"$exe" run "$tmp/cold.yaml" -o "$tmp/cold" --csv --quiet >/dev/null 2>"$tmp/err" || bad "cold start run: $(cat "$tmp/err")"
[ "$(sed -n 2p "$tmp/cold/instances.csv" | cut -d, -f6,7)" = "0,6.6061045" ] \
	&& [ "$(tail -n +2 "$tmp/cold/requests.csv" | cut -d, -f3 | sort -u)" = "6.6061045" ] \
	&& ok "cold start: weights over the links plus engine init; requests held" || bad "cold start: $(cat "$tmp/cold/instances.csv")"
"$exe" run "$tmp/cold.yaml" -o "$tmp/cold2" --csv --quiet --set instances.0.replicas=2 >/dev/null 2>&1
[ "$(tail -n +2 "$tmp/cold2/instances.csv" | cut -d, -f7 | tr '\n' ' ')" = "8.2121045 8.2121045 " ] \
	&& ok "two cold starts share the storage link" || bad "two cold starts: $(cat "$tmp/cold2/instances.csv")"
# the uplink of a PCIe switch is an x16 link of its GPUs' generation
# (host_bw defaults to the profile's pcie_bw): two A100s (Gen4, 31.5 GB/s)
# under one switch loading 16.06 GB each from 100 GB/s storage share it,
# 15.75 GB/s each: ready at 5 + 0.0001045 + 16.06 / 15.75 = 6.01978704 s
# (with the 63 GB/s uplink of before, 5.50994577 s: no sharing)
sed -e 's/H100-SXM/A100-80GB-SXM/g' -e 's/storage_bw: 10GB/storage_bw: 100GB/' "$tmp/cold.yaml" > "$tmp/colda.yaml"
"$exe" run "$tmp/colda.yaml" -o "$tmp/colda" --csv --quiet --set instances.0.replicas=2 >/dev/null 2>"$tmp/err" || bad "A100 cold starts: $(cat "$tmp/err")"
[ "$(tail -n +2 "$tmp/colda/instances.csv" | cut -d, -f7 | tr '\n' ' ')" = "6.01978704 6.01978704 " ] \
	&& [ "$(awk -F, '$2 == "host" { print $3 }' "$tmp/colda/links.csv" | sort -u)" = 31500000000 ] \
	&& ok "two A100 cold starts share their switch's Gen4 uplink" || bad "A100 cold starts: $(cat "$tmp/colda/instances.csv")"
sed 's/^cluster.*$//' "$tmp/cold.yaml" > "$tmp/cold3.yaml"
"$exe" run "$tmp/cold3.yaml" -o "$tmp/cold3" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "instances\[0\].cold_start: a cold start moves weights over the cluster's links" "$tmp/err" \
	&& ok "cold start needs a cluster" || bad "cold start without cluster: rc=$rc $(cat "$tmp/err")"

# KV swap: preempted requests keep their KV in host memory, so the tokens
# processed are the no-preemption minimum 12 x (200 + 299) = 5988, and the
# bytes moved are twice (out and back) whole tokens of 131072 B of KV
for m in recompute swap; do
	"$exe" run "$scen/swap.yaml" -o "$tmp/sw_$m" --csv --quiet --set instances.0.preemption_mode=$m >/dev/null 2>"$tmp/err" || bad "swap scenario $m: $(cat "$tmp/err")"
done
IFS=, read -r rtok rpre rswaps <<< "$(sed -n 2p "$tmp/sw_recompute/instances.csv" | cut -d, -f11,12,18)"
IFS=, read -r stok spre sswaps sbytes <<< "$(sed -n 2p "$tmp/sw_swap/instances.csv" | cut -d, -f11,12,18,19)"
[ "$stok" = 5988 ] && [ "$rtok" -gt 5988 ] && [ "$spre" -gt 0 ] && [ "$sswaps" = "$spre" ] && [ "$rswaps" = 0 ] \
	&& [ $((sbytes % 262144)) -eq 0 ] && [ "$(grep '^completed,' "$tmp/sw_swap/summary.csv")" = "completed,12," ] \
	&& awk -F, -v b="$sbytes" '$2 == "host" { d = $5 - b; if (d < 0) d = -d; if (d < 1) found = 1 } END { exit !found }' "$tmp/sw_swap/links.csv" \
	&& ok "KV swap: no recompute ($stok vs $rtok tokens), $sswaps swaps, $sbytes bytes, all on the PCIe host link" \
	|| bad "KV swap: swap $stok/$spre/$sswaps/$sbytes recompute $rtok/$rpre/$rswaps"

# KV offload (kv_offload: host): of 70 blocks, the second prompt evicts 58
# of the first's 64 (tails first), copied to host memory; the third prompt
# repeats the first: 6 blocks hit on the GPU, 57 (up to the last token's
# block) in host memory, reloaded as 57 x 16 x 131072 = 119,537,664 B while
# the offload of the 58 blocks its allocation evicts leaves on the same
# host link (63 GB/s, both directions shared): 31.5 GB/s each, so the
# reload takes 1.5 us + 119537664 / 31.5 B/ns = 3,796,347 ns more than the
# same prefill with all 63 blocks on the GPU (200 blocks), and recomputing
# (kv_offload: none, 928 tokens) takes longer still
for o in host none big; do
	set -- --set instances.0.kv_offload=$o
	[ $o = big ] && set -- --set instances.0.num_gpu_blocks=200
	"$exe" run "$scen/kv_offload.yaml" -o "$tmp/kvo_$o" --csv --quiet "$@" >/dev/null 2>"$tmp/err" || bad "kv offload $o: $(cat "$tmp/err")"
done
t_host=$(sed -n 4p "$tmp/kvo_host/requests.csv" | cut -d, -f4)
t_none=$(sed -n 4p "$tmp/kvo_none/requests.csv" | cut -d, -f4)
t_big=$(sed -n 4p "$tmp/kvo_big/requests.csv" | cut -d, -f4)
[ "$(grep -E '^kv_(reload_bytes|offload_bytes|host_hit_tokens),' "$tmp/kvo_host/summary.csv" | tr '\n' ' ')" = "kv_offload_bytes,243269632,B kv_reload_bytes,119537664,B kv_host_hit_tokens,912, " ] \
	&& ! grep -q '^kv_' "$tmp/kvo_none/summary.csv" \
	&& awk -v h="$t_host" -v b="$t_big" -v n="$t_none" 'BEGIN { d = (h - b) * 1e9 - 3796347; if (d < 0) d = -d; exit !(d < 2 && h < n) }' \
	&& ok "KV offload: a prefix reloaded from host takes 1.5 us + bytes / PCIe share ($t_host vs $t_big on GPU, $t_none recomputed)" \
	|| bad "KV offload: $t_host $t_big $t_none $(grep '^kv_' "$tmp/kvo_host/summary.csv")"
sed -e 's/^cluster.*$//' -e "s#\.\./traces#$scen/../traces#" "$scen/kv_offload.yaml" > "$tmp/kvo_nocl.yaml"
"$exe" run "$tmp/kvo_nocl.yaml" -o "$tmp/kvo_nocl" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "kv_offload: KV offload copies prefix-cache blocks over the cluster's" "$tmp/err" \
	&& ok "KV offload needs a cluster" || bad "kv offload without cluster: rc=$rc $(cat "$tmp/err")"
"$exe" run "$scen/kv_offload.yaml" -o "$tmp/kvo_sp" --set instances.0.kv_offload_space=0 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "kv_offload_space" "$tmp/err" \
	&& ok "KV offload needs room for a block" || bad "kv offload space 0: rc=$rc $(cat "$tmp/err")"

# PCIe interference: kernels slow down by 1 + a u / (1 - u)^b at the PCIe
# load u (P100 profile: a 0.15, b 1); a saturated link gives u = 0.99
"$exe" run "$scen/pcie_interference.yaml" -o "$tmp/if1" --csv --quiet >/dev/null 2>&1 || bad "interference run"
"$exe" run "$scen/pcie_interference.yaml" -o "$tmp/if0" --csv --quiet --set background.0.streams=0 >/dev/null 2>&1 || bad "interference run 0"
e1=$(sed -n 2p "$tmp/if1/requests.csv" | awk -F, '{print $5 - $2}')
e0=$(sed -n 2p "$tmp/if0/requests.csv" | awk -F, '{print $5 - $2}')
awk -v a="$e1" -v b="$e0" 'BEGIN { r = a / b; d = r - 15.85; if (d < 0) d = -d; exit !(d < 1e-4) }' \
	&& ok "PCIe interference slows the step 15.85x on a saturated link" || bad "interference: $e1 / $e0"

# a step's inputs and outputs as flows (io_in_bytes, io_out_bytes): one
# BERT-base request of 128 tokens on the P100 finishes later by the upload,
# 1.5 us of path latency (host 0.5 + PCIe 1) and 128 x 24 B at 12.2 B/ns
# (251.8, rounded up to 252 ns), plus the download, 1.5 us and 128 x
# 3072 B at 12.2 B/ns (32,230.8 -> 32,231 ns): 35,483 ns in all
for io in 0 1; do
	"$exe" run "$src/examples/pcie_contention.yaml" -o "$tmp/io$io" --csv --quiet \
		--set workload.count=1 --set background.0.streams=0 \
		--set instances.0.io_in_bytes=$((24 * io)) --set instances.0.io_out_bytes=$((3072 * io)) \
		>/dev/null 2>"$tmp/err" || bad "io run $io: $(cat "$tmp/err")"
done
io=$(paste -d, "$tmp/io0/requests.csv" "$tmp/io1/requests.csv" | sed -n 2p | awk -F, '
	{ n = NF / 2; printf "%.0f", ($(n + 5) - $5) * 1e9 }')
[ "$io" = 35483 ] && ok "a step's inputs and outputs cross PCIe before and after its kernels" \
	|| bad "io: finish moved by $io ns, want 35483"

# a tenant's class (network.link_classes[].tenant): the one trace is
# tenant 0, so its inference flows at high priority move as the kind's do
# at high priority (the same requests.csv), and ahead of 2 streams of
# background copies that fair sharing lets slow them (a later finish)
for lc in none kind tenant; do
	case $lc in
	none) add= ;;
	kind) add='  link_classes: [{kind: inference, priority: high}]' ;;
	tenant) add='  link_classes: [{kind: inference, tenant: "0", priority: high}]' ;;
	esac
	awk -v add="$add" '{ print } /^  gpus_per_switch:/ && add != "" { print add }' \
		"$src/examples/pcie_contention.yaml" > "$tmp/lc_$lc.yaml"
	"$exe" run "$tmp/lc_$lc.yaml" -o "$tmp/lc_$lc" --csv --quiet --set workload.count=20 \
		--set background.0.streams=2 --set background.0.block=32MiB \
		>/dev/null 2>"$tmp/err" || bad "link class run $lc: $(cat "$tmp/err")"
done
cmp -s "$tmp/lc_kind/requests.csv" "$tmp/lc_tenant/requests.csv" \
	&& ! cmp -s "$tmp/lc_none/requests.csv" "$tmp/lc_tenant/requests.csv" \
	&& ok "a tenant's link class takes its requests' inference flows" \
	|| bad "tenant link class: requests differ from the kind's, or equal fair sharing's"

# prefill/decode disaggregation: the KV moves across nodes over a 10 GB/s
# PCIe link (26.2144 ms); a background copy on the prefill GPU halves its
# share, so every request finishes exactly 26.2144 ms later, with the same
# first token (produced by the prefill instance)
for n in 0 1; do
	"$exe" run "$scen/pd_transfer.yaml" -o "$tmp/pd$n" --csv --quiet --set background.0.streams=$n >/dev/null 2>"$tmp/err" || bad "pd run $n: $(cat "$tmp/err")"
done
pd=$(paste -d, "$tmp/pd0/requests.csv" "$tmp/pd1/requests.csv" | tail -n +2 | awk -F, '
	{ n = NF / 2; dt = $(n + 5) - $5; df = $(n + 4) - $4
	  if (dt - 0.0262144 > 1e-9 || 0.0262144 - dt > 1e-9 || df != 0) bad = 1
	  if ($8 != 1 || $17 != 0) bad = 1 }
	END { print bad ? "bad" : "ok" }')
[ "$pd" = ok ] && [ "$(sed -n 2p "$tmp/pd0/instances.csv" | cut -d, -f20,21)" = "1,1048576000" ] \
	&& ok "disaggregation: KV transfer time follows the contended PCIe share" || bad "disaggregation: $(cat "$tmp/pd1/requests.csv")"
# with the first token streamed from the decode instance (first_token:
# decode), TTFT includes the KV transfer and rises by the same 26.2144 ms
for n in 0 1; do
	"$exe" run "$scen/pd_transfer.yaml" -o "$tmp/pdd$n" --csv --quiet --set background.0.streams=$n \
		--set instances.0.first_token=decode >/dev/null 2>"$tmp/err" || bad "pd decode run $n: $(cat "$tmp/err")"
done
pdd=$(paste -d, "$tmp/pd0/requests.csv" "$tmp/pdd0/requests.csv" "$tmp/pdd1/requests.csv" | tail -n +2 | awk -F, '
	function off(x, y) { d = x - y; if (d < 0) d = -d; return d > 1e-9 }
	{ n = NF / 3
	  # uncontended: the first token arrives with the KV, 26.2144 ms after
	  # the prefill plus the path latency (PCIe 1 + switch 0.5 + NIC 2 us,
	  # twice: 7 us); E2E unchanged
	  if (off($(n + 4) - $4, 0.0262214) || off($(n + 5), $5)) bad = 1
	  # contended: TTFT and E2E both 26.2144 ms later
	  if (off($(2 * n + 4) - $(n + 4), 0.0262144) || off($(2 * n + 5) - $(n + 5), 0.0262144)) bad = 1 }
	END { print bad ? "bad" : "ok" }')
[ "$pdd" = ok ] && ok "disaggregation, first token from decode: TTFT rises 26.2144 ms with the transfer" \
	|| bad "disaggregation first_token decode: $(cat "$tmp/pdd1/requests.csv")"
"$exe" run "$scen/pd_transfer.yaml" -o "$tmp/pdd2" --set instances.1.first_token=decode >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "instances\[1\].first_token: decode: only a prefill instance" "$tmp/err" \
	&& ok "first_token: decode only on prefill instances" || bad "first_token check: rc=$rc $(cat "$tmp/err")"
sed 's/role: decode/role: both/' "$scen/pd_transfer.yaml" > "$tmp/pd2.yaml"
"$exe" run "$tmp/pd2.yaml" -o "$tmp/pd2" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "instances\[1\].role: model Llama-3.1-8B has prefill instances but no decode instance" "$tmp/err" \
	&& ok "prefill instances need decode instances" || bad "pd roles: rc=$rc $(cat "$tmp/err")"

# disaggregation under failures (tests/data/scenarios/pd_failures.yaml): an
# evicted instance drops its KV cache, and a hand-over from it finishing
# later releases nothing there; every request still ends exactly once
"$exe" run "$scen/pd_failures.yaml" -o "$tmp/pdf" --csv --quiet >/dev/null 2>"$tmp/err"; rc=$?
pdf=$(awk -F, '{ v[$1] = $2 } END {
	ok = v["requests"] == 3000 && v["unfinished"] == 0 && v["failures"] >= 10 &&
	     v["completed"] + v["rejected"] + v["failed"] == v["requests"]
	print ok ? "ok" : "bad" }' "$tmp/pdf/summary.csv" 2>/dev/null)
[ $rc -eq 0 ] && [ "$pdf" = ok ] && ok "disaggregation under failures: every request ends once, evicted caches dropped" \
	|| bad "pd failures: rc=$rc $(cat "$tmp/err") $(grep -E '^(requests|completed|rejected|failed|unfinished|failures),' "$tmp/pdf/summary.csv" 2>/dev/null)"

# macro steps (macro_steps: true): the same requests, time series and
# instance counters as step by step, on disaggregation under failures and
# on swapping preemptions under a time limit, with far fewer events; only
# the end of the run (its last token message is a run's tokens) moves
macro_same() { # name scenario extra --set arguments...
	local n=$1 f=$2
	shift 2
	"$exe" run "$f" -o "$tmp/ms0$n" --csv --quiet "$@" >/dev/null 2>"$tmp/err" &&
		"$exe" run "$f" -o "$tmp/ms1$n" --csv --quiet --set macro_steps=true "$@" \
			>/dev/null 2>>"$tmp/err" || return 1
	cmp -s "$tmp/ms0$n/requests.csv" "$tmp/ms1$n/requests.csv" &&
		cmp -s "$tmp/ms0$n/timeseries.csv" "$tmp/ms1$n/timeseries.csv" &&
		[ "$(cut -d, -f1-7,9-13,16-22,24- "$tmp/ms0$n/instances.csv")" = \
		  "$(cut -d, -f1-7,9-13,16-22,24- "$tmp/ms1$n/instances.csv")" ] || return 1
	local e0 e1
	e0=$(grep '^sim_events,' "$tmp/ms0$n/summary.csv" | cut -d, -f2)
	e1=$(grep '^sim_events,' "$tmp/ms1$n/summary.csv" | cut -d, -f2)
	[ "$e1" -lt "$e0" ] && echo "$e0 -> $e1"
}
ms1=$(macro_same pd "$scen/pd_failures.yaml") && ms2=$(macro_same swap "$scen/swap.yaml" \
	--set duration=3.3s --set instances.0.num_gpu_blocks=200) && \
	[ "$(awk -F, 'NR > 1 { n += $18 } END { print (n > 0) }' "$tmp/ms0swap/instances.csv")" = 1 ] \
	&& ok "macro steps: same requests and counters, events $ms1 (P/D, failures), $ms2 (swaps, limit)" \
	|| bad "macro steps differ: $(cat "$tmp/err") $ms1 $ms2"
# Routers that read what runs change step by step (free KV blocks, queued
# tokens) route the same with macro steps, whose requests settle lazily:
# what the router sees of an instance in a run is advanced at every
# arrival without touching its requests.
ms3=$(macro_same kv "$src/examples/quickstart.yaml" --set scheduler.router=kv_aware \
	--set instances.0.replicas=8 --set workload.time_scale=0.5 --set duration=300s) &&
	ms4=$(macro_same tok "$src/examples/quickstart.yaml" --set scheduler.router=least_tokens \
		--set instances.0.replicas=8 --set workload.time_scale=0.5 --set duration=300s) &&
	ok "macro steps: kv_aware and least_tokens route the same, events $ms3, $ms4" ||
	bad "macro steps route differently: $(cat "$tmp/err") $ms3 $ms4"

# pipeline parallelism (tests/data/scenarios/pp.yaml): with pp 2 each step
# computes the same work split over the stages (the stage times add up to
# the step's, docs/parallelism.md; tests/test_pipeline.c checks the hand
# sums) plus stage 0's activations to stage 1 over NVLink at 100 GB/s:
# 16.384 MB for the 1000-token prefill (163,840 ns + 2 us of path
# latency), 16,384 B per decode step (164 ns + 2 us), each followed by
# NCCL's send/recv latency L of the collective model (the same L for
# both); 9 decode steps. The KV capacity grows with the second GPU's
# memory (vLLM's memory plan, docs/memory.md: one H100 of 79.22 GiB at
# 0.9 less 14.96 GiB of weights, 0.87 GiB of activations and 0.16 GiB
# non-torch leaves 55.31 GiB, 28,316 blocks of 2 MiB; with pp 2 each
# stage's rank keeps 62.70 GiB for blocks of its 16 layers, 1 MiB each:
# 64,199)
pp_diff() { # run A, run B: the TTFT and E2E differences in ns, one line per request
	paste -d, "$1/requests.csv" "$2/requests.csv" | tail -n +2 |
		awk -F, '{ n = NF / 2; printf "%.0f %.0f\n", ($(n + 4) - $4) * 1e9, ($(n + 5) - $5) * 1e9 }' | sort -u
}
for c in 1,1 1,2 2,1 2,2; do
	"$exe" run "$scen/pp.yaml" -o "$tmp/pp$c" --csv --quiet --set instances.0.tp=${c%,*} \
		--set instances.0.pp=${c#*,} >/dev/null 2>"$tmp/err" || bad "pp run $c: $(cat "$tmp/err")"
done
d=$(pp_diff "$tmp/pp1,1" "$tmp/pp1,2"); P=${d% *}; E=${d#* }; L=$((P - 165840))
[ "$L" -gt 0 ] && [ "$L" -lt 20000 ] && [ $((E - P - 9 * (2164 + L))) -le 9 ] \
	&& [ $((E - P - 9 * (2164 + L))) -ge -9 ] \
	&& [ "$(sed -n 2p "$tmp/pp1,2/instances.csv" | cut -d, -f4,13,24,25)" = "1,64199,2,49594368" ] \
	&& [ "$(sed -n 2p "$tmp/pp1,1/instances.csv" | cut -d, -f13)" = 28316 ] \
	&& ok "pipeline stages: activations over NVLink add 165,840 ns + L to the prefill and 2,164 ns + L per decode step (L = $L ns)" \
	|| bad "pp 2: $d $(sed -n 2p "$tmp/pp1,2/instances.csv")"
# tp 2 x pp 2: each rank sends half the activations (81,920 ns + 2 us + L,
# two flows on separate NVLinks), stage 1 all-gathers them (vLLM's
# send-allgather), and each stage's ring all-reduce carries its layers'
# share (a second ring latency of 2 us); the exact sums are
# tests/test_pipeline.c's
d=$(pp_diff "$tmp/pp2,1" "$tmp/pp2,2")
[ "${d% *}" -gt $((85920 + L)) ] && [ "${d#* }" -gt $((${d% *} + 9 * (4082 + L))) ] \
	&& ok "pipeline stages with tensor parallelism: per-rank sends, all-gathers and per-stage rings" || bad "tp 2 pp 2: $d"
# without a cluster the send is the collective model's alone: L + bytes
# over the NVSwitch bandwidth it gives an H100 (NCCL's per-link figure x
# 18 links), rounded up: ceil(L + 16,384,000 / bw) and ceil(L + 16,384 / bw)
grep -v '^cluster\|^network' "$scen/pp.yaml" > "$tmp/ppnc.yaml"
for p in 1 2; do
	"$exe" run "$tmp/ppnc.yaml" -o "$tmp/ppnc$p" --csv --quiet --set instances.0.pp=$p >/dev/null 2>"$tmp/err" || bad "pp no cluster: $(cat "$tmp/err")"
done
d=$(pp_diff "$tmp/ppnc1" "$tmp/ppnc2"); X=${d% *}
awk -v p="$X" -v e="${d#* }" -v l="$L" 'BEGIN { bw = 16384000 / (p - l); s = (e - p) / 9 - l # bw in B/ns
	exit !(bw > 300 && bw < 460 && s >= 16384 / bw - 1 && s <= 16384 / bw + 2) }' \
	&& ok "pipeline stages without a cluster: the collective model's send/recv ($d)" \
	|| bad "pp without cluster: $d (L $L)"
"$exe" run "$scen/pp.yaml" -o "$tmp/ppbad" --set instances.0.tp=4 --set instances.0.pp=4 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "instances\[0\].replicas: not enough H100-SXM GPUs in the cluster for replica 1 (16 GPUs: tp 4 x pp 4; each stage must fit in one node)" "$tmp/err" \
	&& ok "a replica's stages must find room" || bad "pp placement: rc=$rc $(cat "$tmp/err")"
# two batches in flight (tests/data/scenarios/pp_pipelined.yaml): A's first
# token at T + X (its compute split over the stages, X the send above); B
# forms at once, takes stage 0 when A leaves it and stage 1 when A leaves
# that, so its first token comes one stage-1 time after A's: more than
# T / 2 (stage 1 holds the LM head), less than the T + X of one batch at a
# time
"$exe" run "$scen/pp_pipelined.yaml" -o "$tmp/ppl" --csv --quiet >/dev/null 2>"$tmp/err" || bad "pp pipelined: $(cat "$tmp/err")"
ppl=$(awk -F, -v x="$X" 'NR == 2 { a = $4 } NR == 3 { b = $4 } END {
	t = a * 1e9 - x; d = (b - a) * 1e9
	print (d > t / 2 && d < 0.6 * t && a > 0.02) ? "ok" : "bad " t " " d }' "$tmp/ppl/requests.csv")
[ "$ppl" = ok ] && ok "pipeline: a second batch in flight gets its first token a stage later" || bad "pp pipelined: $ppl"
# saturated, pp 2 on two GPUs delivers 1.7 - 2x the output rate of pp 1
for p in 1 2; do
	"$exe" run "$scen/pp_saturated.yaml" -o "$tmp/pps$p" --csv --quiet --set instances.0.pp=$p >/dev/null 2>"$tmp/err" \
		|| bad "pp saturated: $(cat "$tmp/err")"
done
r1=$(grep '^output_tokens_per_s,' "$tmp/pps1/summary.csv" | cut -d, -f2)
r2=$(grep '^output_tokens_per_s,' "$tmp/pps2/summary.csv" | cut -d, -f2)
awk -v a="$r1" -v b="$r2" 'BEGIN { r = b / a; exit !(r >= 1.7 && r <= 2.0) }' \
	&& [ "$(grep '^completed,' "$tmp/pps2/summary.csv")" = "completed,1500," ] \
	&& ok "pipeline: pp 2 serves $(awk -v a="$r1" -v b="$r2" 'BEGIN { printf "%.2f", b / a }')x the output rate of pp 1" \
	|| bad "pp saturated: $r1 -> $r2"
# a pipeline across two nodes (tests/data/scenarios/pp_nodes.yaml): each
# stage on its own node, activations over PCIe, host link and NICs;
# prefill 40,960 + 7,000 + 2,000 ns + L, decode steps 41 + 7,000 + 2,000 ns
# + L, each plus stage 1's all-gathers over its 8 GPUs
for p in 1 2; do
	"$exe" run "$scen/pp_nodes.yaml" -o "$tmp/ppn$p" --csv --quiet --set instances.0.pp=$p >/dev/null 2>"$tmp/err" \
		|| bad "pp across nodes: $(cat "$tmp/err")"
done
nic=$(awk -F, '$2 == "nic" && $5 > 0 { n++; b = $5 } END { print n "," b }' "$tmp/ppn2/links.csv")
d=$(pp_diff "$tmp/ppn1" "$tmp/ppn2")
[ "${d% *}" -gt $((49960 + L)) ] && [ "${d#* }" -gt $((${d% *} + 9 * (9041 + L))) ] && [ "$nic" = "2,49594368" ] \
	&& [ "$(sed -n 2p "$tmp/ppn2/instances.csv" | cut -d, -f5,24,25)" = "0,2,49594368" ] \
	&& ok "a pipeline across nodes: stage-to-stage activations cross the NICs" \
	|| bad "pp across nodes: $d nic $nic"

# messages: each request crosses the ToR downlink and the NIC to its node
# (store and forward: latencies 1 + 2 us plus 1536 B serialized at 12.8 TB/s
# and 400 GB/s), and each step's tokens go back out; one message per
# request in, one per step out
"$exe" run "$scen/small.yaml" -o "$tmp/msg1" --csv --quiet >/dev/null 2>&1
"$exe" run "$scen/small.yaml" -o "$tmp/msg0" --csv --quiet --set network.messages=false >/dev/null 2>&1
# the node's two NIC links, out (steps) and in (requests), in link order
nic_out=$(awk -F, '$2 == "nic" && $8 > 0 { n++; if (n == 1) print $8 }' "$tmp/msg1/links.csv")
nic_in=$(awk -F, '$2 == "nic" && $8 > 0 { n++; if (n == 2) print $8 }' "$tmp/msg1/links.csv")
steps=$(tail -n +2 "$tmp/msg1/instances.csv" | awk -F, '{ s += $10 } END { print s }')
ahead=$(paste -d, "$tmp/msg0/requests.csv" "$tmp/msg1/requests.csv" | sed -n 2p | awk -F, '{ printf "%.9f", $(NF / 2 + 3) - $3 }')
[ "$nic_out" = "$steps" ] && [ "$nic_in" = 300 ] \
	&& [ "$(awk -F, '$2 == "tor" { s += $8 } END { print s }' "$tmp/msg1/links.csv")" -gt 0 ] \
	&& awk -v a="$ahead" 'BEGIN { exit !(a >= 0.000003 && a <= 0.0000031) }' \
	&& ok "messages: $nic_in requests in, $nic_out step messages out, dispatch +$ahead s" \
	|| bad "messages: in=$nic_in out=$nic_out steps=$steps first_sched delay=$ahead"

# tensor-parallel all-reduce on the links (roofline): 20 steps, each 2 us
# of NVLink latency longer than without the flows (each capped at the
# collective model's rate, so alone on its links it takes the model's
# time); 1019 tokens x 80 x 2 x 3/4 x 16384 B = 4006871040 B on every
# NVLink of the ring
for v in true false; do
	"$exe" run "$scen/tp_ring.yaml" -o "$tmp/tp$v" --csv --quiet --set network.allreduce_on_links=$v >/dev/null 2>"$tmp/err" || bad "tp ring $v: $(cat "$tmp/err")"
done
d=$(paste -d, "$tmp/tptrue/requests.csv" "$tmp/tpfalse/requests.csv" | tail -1 | awk -F, '{ printf "%.9f", $5 - $(NF / 2 + 5) }')
awk -v d="$d" 'BEGIN { exit !(d >= 0.00004 && d <= 0.00004002) }' \
	&& [ "$(awk -F, '$2 == "nvlink" && $5 == 4006871040' "$tmp/tptrue/links.csv" | wc -l)" = 8 ] \
	&& ok "TP all-reduce as ring flows on NVLink ($d s over 20 steps)" || bad "tp ring: +$d s; $(awk -F, '$2 == "nvlink"' "$tmp/tptrue/links.csv" | head -3)"

# a table instance's all-reduces on the links (table_tp2_links.yaml, TP 2
# under one PCIe switch): each GPU's flow is capped at the NCCL model's
# rate, so a step takes what it takes without a cluster plus its path's
# latency, 11 steps x 2 us with P2P (pcie_up, pcie_down: the uplink
# carries nothing) and x 2.5 us without (RTX 4090: through the uplink,
# which carries both flows); the flows carry 2058 tokens x 32 layers x 2
# x 8192 B = 1078984704 B each. Before the cap the RTX 4090's steps came
# out as fast as the RTX PRO 6000's (flows at the links' rate).
for g in RTX-PRO-6000 RTX-4090; do
	for v in true false; do
		"$exe" run "$scen/table_tp2_links.yaml" -o "$tmp/tl$g$v" --csv --quiet --set instances.0.gpu=$g \
			--set cluster.0.gpu=$g --set network.allreduce_on_links=$v >/dev/null 2>"$tmp/err" || bad "table tp2 links $g $v: $(cat "$tmp/err")"
	done
	d=$(paste -d, "$tmp/tl${g}true/requests.csv" "$tmp/tl${g}false/requests.csv" | tail -1 | awk -F, '{ printf "%.9f", $5 - $(NF / 2 + 5) }')
	up=$(awk -F, '$2 == "host" { print $5 }' "$tmp/tl${g}true/links.csv")
	pc=$(awk -F, '$2 == "pcie" && $5 == 1078984704' "$tmp/tl${g}true/links.csv" | wc -l)
	case $g in
	RTX-PRO-6000) lo=0.0000205 hi=0.000022 want=0 ;;
	*) lo=0.000026 hi=0.0000275 want=2157969408 ;;
	esac
	awk -v d="$d" -v lo=$lo -v hi=$hi 'BEGIN { exit !(d >= lo && d <= hi) }' && [ "$up" = $want ] && [ "$pc" = 4 ] \
		&& ok "table TP 2 all-reduce flows on $g: +$d s over 11 steps, uplink $up B" \
		|| bad "table tp2 links $g: +$d s (want $lo-$hi), uplink $up B (want $want), $pc PCIe links with the ring bytes"
done

# TP 2 x PP 2 of the same request on four RTX PRO 6000s, two per switch,
# with a cluster against without: every collective moves as flows capped at
# the model's rate (stage 0's all-reduces and stage 1's all-gathers inside
# a switch, 2 us of path latency each; the two sends from switch 0 to
# switch 1 share its uplink as the model counts them, 3 us), so each of
# the 11 steps takes 9 us more; the uplinks carry the sends alone: 2 ranks
# x 2058 tokens x 4096 x 4 B / 2
sed -e 's/^cluster.*$//' -e "s#\.\./\.\./\.\./calibrate#$src/calibrate#" "$scen/table_tp2_links.yaml" > "$tmp/tl_nocl.yaml"
"$exe" run "$tmp/tl_nocl.yaml" -o "$tmp/tlpp0" --csv --quiet --set instances.0.pp=2 >/dev/null 2>"$tmp/err" || bad "tp2 pp2 without cluster: $(cat "$tmp/err")"
"$exe" run "$scen/table_tp2_links.yaml" -o "$tmp/tlpp1" --csv --quiet --set instances.0.pp=2 --set cluster.0.gpus_per_node=4 >/dev/null 2>"$tmp/err" || bad "tp2 pp2 with cluster: $(cat "$tmp/err")"
d=$(paste -d, "$tmp/tlpp1/requests.csv" "$tmp/tlpp0/requests.csv" | tail -1 | awk -F, '{ n = NF / 2; printf "%.0f %.0f", ($4 - $(n + 4)) * 1e9, ($5 - $(n + 5)) * 1e9 }')
up=$(awk -F, '$2 == "host" { print $5 }' "$tmp/tlpp1/links.csv" | sort -u)
[ "${d% *}" -ge 8990 ] && [ "${d% *}" -le 9050 ] && [ "${d#* }" -ge 98500 ] && [ "${d#* }" -le 99050 ] && [ "$up" = 33718272 ] \
	&& ok "TP 2 x PP 2 on a cluster: all-reduces, sends and all-gathers as capped flows (+$d ns)" \
	|| bad "tp2 pp2 cluster: first token and finish +$d ns (want 9000 and 99000 less rounding), uplinks $up B"

# expert parallelism on a cluster (dp2_ep_moe.yaml, one request, two RTX
# PRO 6000s under one switch): each step's dispatches and combines (48
# all-gathers and 48 reduce-scatters) move as one flow each way between
# the ranks' GPUs, capped at the model's rate, so each of the 128 steps
# takes the 2 us of path latency more (less the closed form's rounding of
# 96 collectives); each flow carries 2 x 48 layers x T_max x 2048 x 2 B
# (what an all-gather brings from the other rank, and a reduce-scatter
# sends back) over the steps' T_max (1024 + 127 x 1)
sed "s#\.\./\.\./\.\./calibrate#$src/calibrate#" "$scen/dp2_ep_moe.yaml" > "$tmp/ep0.yaml"
{ cat "$tmp/ep0.yaml"; echo 'cluster: [{gpu: RTX-PRO-6000, count: 1, gpus_per_node: 2}]'; echo 'network: {messages: false}'; } > "$tmp/ep1.yaml"
for f in ep0 ep1; do
	"$exe" run "$tmp/$f.yaml" -o "$tmp/o$f" --csv --quiet --set workload.count=1 >/dev/null 2>"$tmp/err" || bad "$f: $(cat "$tmp/err")"
done
d=$(paste -d, "$tmp/oep1/requests.csv" "$tmp/oep0/requests.csv" | tail -1 | awk -F, '{ n = NF / 2; printf "%.0f", ($5 - $(n + 5)) * 1e9 / 128 }')
pc=$(awk -F, '$2 == "pcie" && $5 == 452591616' "$tmp/oep1/links.csv" | wc -l)
[ "$d" -ge 1900 ] && [ "$d" -le 2000 ] && [ "$pc" = 4 ] \
	&& ok "expert-parallel dispatch and combine as flows between the ranks' GPUs (+$d ns a step)" \
	|| bad "ep on links: +$d ns a step (want 1900-2000), $pc PCIe links with 452591616 B"

# check prints the layout the links take: from the node group's profile
# even where only training jobs use it (V100: Gen3 x16, NVLink 150 GB/s),
# and the network keys where they are set
net=$("$exe" check "$src/examples/training.yaml" 2>&1 | tail -1)
net2=$("$exe" check "$scen/pp_nodes.yaml" 2>&1 | tail -1)
case "$net" in *"PCIe links of 15.75 GB/s"*"2 under each switch, whose uplink has 15.75 GB/s"*"peer-to-peer on; NVLink 150.00 GB/s"*"from V100-SXM2's profile"*)
	case "$net2" in *"PCIe links of 64.00 GB/s"*"1 under each switch"*"NVLink 100.00 GB/s"*) ok "check prints the cluster's PCIe and NVLink layout" ;;
	*) bad "check network line: $net2" ;; esac ;;
*) bad "check network line: $net" ;;
esac

# the collective model takes the cluster's GPUs per switch: RTX 4090s
# (P2P off) each under its own switch (network.gpus_per_switch=1) stage
# through their own uplinks, NCCL's 24 GB/s where a shared switch gives
# 12, so the 2,048-token prefill's 65 all-reduces of 16 MiB (two a layer
# and the embedding's) take 65 x (16777216 / 12e9 - 16777216 / 24e9) s =
# 45.438 ms less, and the all-gather of its one sequence's logits
# (128,256 x 2 B, ring Simple at 2 x 12 or 2 x 24 GB/s of algorithm
# bandwidth) 256512 / 24e9 - 256512 / 48e9 s = 5.3 us less: 45.444 ms
"$exe" run "$scen/table_tp2_links.yaml" -o "$tmp/tlsw1" --csv --quiet --set instances.0.gpu=RTX-4090 \
	--set cluster.0.gpu=RTX-4090 --set network.gpus_per_switch=1 --set network.allreduce_on_links=false >/dev/null 2>"$tmp/err" || bad "gpus_per_switch 1: $(cat "$tmp/err")"
d=$(paste -d, "$tmp/tlRTX-4090false/requests.csv" "$tmp/tlsw1/requests.csv" | tail -1 | awk -F, '{ printf "%.6f", ($4 - $2) - ($(NF / 2 + 4) - $(NF / 2 + 2)) }')
[ "$d" = 0.045444 ] && ok "the collective model takes the cluster's gpus_per_switch (TTFT -$d s)" || bad "gpus_per_switch 1: TTFT -$d s, want 0.045444"

# failures (examples/failures.yaml): every request ends exactly once; a
# failed replica is declared dead at the third missed 1 s heartbeat, and
# its replacement starts then
"$exe" run "$src/examples/failures.yaml" -o "$tmp/fl1" --csv --quiet >/dev/null 2>"$tmp/err" || bad "failures run: $(cat "$tmp/err")"
"$exe" run "$src/examples/failures.yaml" -o "$tmp/fl2" --csv --quiet >/dev/null 2>&1
fs() { grep "^$2," "$tmp/$1/summary.csv" | cut -d, -f2; }
rows=$(($(wc -l < "$tmp/fl1/requests.csv") - 1))
ends=$(awk -v a="$(fs fl1 completed)" -v b="$(fs fl1 rejected)" -v c="$(fs fl1 failed)" -v d="$(fs fl1 unfinished)" 'BEGIN { print a + b + c + d }')
[ "$rows" = "$(fs fl1 requests)" ] && [ "$ends" = "$rows" ] && [ "$(fs fl1 failures)" -gt 0 ] \
	&& [ "$(fs fl1 requeued)" -gt 0 ] && cmp -s "$tmp/fl1/summary.csv" "$tmp/fl2/summary.csv" \
	&& cmp -s "$tmp/fl1/requests.csv" "$tmp/fl2/requests.csv" \
	&& ok "failures: $(fs fl1 failures) failures, $(fs fl1 requeued) re-queued, every request ends once, deterministic" \
	|| bad "failures: rows=$rows ends=$ends $(head -6 "$tmp/fl1/summary.csv" | tr '\n' ' ')"
# (a replacement needs free GPUs: failed ones stay out of service, so the
# 8-GPU node runs out of room after four replacements)
det=$(tail -n +2 "$tmp/fl1/instances.csv" | awk -F, '$22 >= 0 { want = int($22) + 1 + 2; if ($8 != want) bad = 1; stops[$8] = 1 }
	$6 > 0 { starts[$6] = 1; n++ } END { for (t in starts) if (!(t in stops)) bad = 1; print (bad || n != 4) ? "bad" : "ok" }')
[ "$det" = ok ] && ok "failure detected at the 3rd missed heartbeat; replaced then" || bad "detection: $(cut -d, -f1,6,7,8,22 "$tmp/fl1/instances.csv" | tr '\n' ' ')"
"$exe" run "$src/examples/failures.yaml" -o "$tmp/fl3" --csv --quiet --set synchronizer.retries=0 >/dev/null 2>&1
[ "$(fs fl3 requeued)" = 0 ] && [ "$(fs fl3 failed)" -gt 0 ] \
	&& [ "$(awk -F, 'NR > 1 && $10 == 2 && $13 == 7' "$tmp/fl3/requests.csv" | wc -l)" = "$(fs fl3 failed)" ] \
	&& ok "retries 0: caught requests fail with reason 7" || bad "retries 0: requeued $(fs fl3 requeued) failed $(fs fl3 failed)"
"$exe" run "$src/examples/failures.yaml" -o "$tmp/fl4" --csv --quiet --set failures.coordinator_mtbf=2min >/dev/null 2>&1
awk -v t="$(fs fl4 control_downtime_s)" 'BEGIN { k = t / 5; exit !(t > 0 && k == int(k)) }' \
	&& [ "$(fs fl4 completed)" = "$(fs fl4 requests)" ] \
	&& ok "coordinator failures: $(fs fl4 control_downtime_s) s of elections (5 s each), nothing lost" || bad "coordinator: $(fs fl4 control_downtime_s)"

# per-GPU failures: an instance fails at the first failure of its tp x pp
# GPUs, so on tp-2 replicas gpu_mtbf 20 min is exactly mtbf 10 min (the
# same exponential draws: byte-identical requests and instances)
"$exe" run "$src/examples/failures.yaml" -o "$tmp/gm1" --csv --quiet --set instances.0.tp=2 \
	--set failures.mtbf=10min >/dev/null 2>"$tmp/err" || bad "mtbf run: $(cat "$tmp/err")"
"$exe" run "$src/examples/failures.yaml" -o "$tmp/gm2" --csv --quiet --set instances.0.tp=2 \
	--set failures.mtbf=0 --set failures.gpu_mtbf=20min >/dev/null 2>"$tmp/err" || bad "gpu_mtbf run: $(cat "$tmp/err")"
[ "$(fs gm2 failures)" -gt 0 ] && cmp -s "$tmp/gm1/requests.csv" "$tmp/gm2/requests.csv" \
	&& cmp -s "$tmp/gm1/instances.csv" "$tmp/gm2/instances.csv" \
	&& ok "gpu_mtbf 20 min on tp-2 replicas = mtbf 10 min ($(fs gm2 failures) failures)" \
	|| bad "gpu_mtbf: $(fs gm1 failures) vs $(fs gm2 failures) failures"

# failures.trace: every row is a failure (instance 0 at 2 s, 1 at 5 s)
printf 'name: ft\ncluster: [{gpu: H100-SXM, count: 1, gpus_per_node: 2}]\ninstances: [{gpu: H100-SXM, replicas: 2}]\nfailures: {trace: ft.csv}\nworkload: {count: 100, rate: 5}\n' > "$tmp/ft.yaml"
printf 'time_s,instance\n2,0\n5,1\n' > "$tmp/ft.csv"
"$exe" run "$tmp/ft.yaml" -o "$tmp/ft" --csv --quiet >/dev/null 2>"$tmp/err" || bad "failure trace run: $(cat "$tmp/err")"
[ "$(fs ft failures)" = 2 ] && ok "failures.trace: both rows fail their instance" || bad "failure trace: $(fs ft failures) failures"

# energy follows the GPUs' utilisation (the steps' work at peak rates):
# with alpha 1 each instance's energy is exactly tp x (pp x idle x life +
# (tdp - idle) x work_s) (H100: idle 100 W, TDP 700 W; PUE 1), with and
# without pipeline stages; its mean utilisation lies strictly inside (0, 1)
energy_ok() {
	awk -F, 'NR > 1 { life = $8 - $6; e = $4 * ($24 * 100 * life + 600 * $26); d = e - $14; if (d < 0) d = -d
		u = $26 / ($24 * life); if (d > 1e-6 * e || !(u > 0.2 && u < 0.95)) bad = 1; n++ }
		END { exit (bad || n == 0) }' "$1/instances.csv"
}
"$exe" run "$scen/small.yaml" -o "$tmp/pw1" --csv --quiet --set power.alpha=1 >/dev/null 2>&1
"$exe" run "$scen/pp_saturated.yaml" -o "$tmp/pw2" --csv --quiet --set power.alpha=1 >/dev/null 2>&1
energy_ok "$tmp/pw1" && energy_ok "$tmp/pw2" && ok "energy from utilisation: idle x lifetime + (tdp - idle) x work, per GPU" \
	|| bad "energy: $(cut -d, -f4,6,8,14,24,26 "$tmp/pw1/instances.csv" "$tmp/pw2/instances.csv")"
# MFU and MBU by hand (docs/output.md): one request of 1,000 prompt and 200
# output tokens on one H100-SXM (989 TFLOP/s, 3.35 TB/s) serving
# Llama-3.1-8B (32 layers, hidden 4096, 32 heads and 8 KV heads of 128, MLP
# 14,336 gated, vocabulary 128,256, 2 B a value): a prefill of 1,000 tokens
# (its first token), then 199 decodes at contexts 1,000 .. 1,198. A step of
# T tokens after p cached ones does 32 x (2 T x 218,103,808 + 4 x 128 x 32
# x (T p + T (T + 1) / 2)) FLOPs plus 2 x 4,096 x 128,256 for the LM head
# of its one sequence, and moves the bytes of the roofline's operator table
# (docs/perf-model.md: weights once, activations, the KV it reads and
# writes). MFU = FLOPs / ((stop - start) x 989e12), MBU = bytes / ((stop -
# start) x 3.35e12); the summary's, over one instance, are its own.
printf 'name: one\nseed: 1\ninstances: [{model: Llama-3.1-8B, gpu: H100-SXM, replicas: 1}]\nworkload: {rate: 1, count: 1, prompt: {dist: fixed, value: 1000}, output: {dist: fixed, value: 200}}\n' > "$tmp/mfu.yaml"
"$exe" run "$tmp/mfu.yaml" -o "$tmp/mfu" --csv > "$tmp/mfu.out" 2>"$tmp/err" || bad "MFU run: $(cat "$tmp/err")"
hand=$(awk -F, 'function step(T, p,   pairs, lay) {
		pairs = T * p + T * (T + 1) / 2
		F += 32 * (2 * T * 218103808 + 4 * 128 * 32 * pairs) + 2 * 4096 * 128256
		lay = 2 * (2 * T * h + h) + h * (q + 2 * kv) + T * (h + q + 2 * kv) + 2 * T * (q + kv) \
			+ 2 * kv * (p + T + T) + 2 * T * q + q * h + T * (q + h) + 2 * h * f + T * (h + 2 * f) \
			+ 3 * T * f + f * h + T * (f + h)
		B += (32 * lay + 2 * T * h + (2 * T * h + h) + h * V + (h + V)) * 2 }
	NR == 2 { h = 4096; q = 4096; kv = 1024; f = 14336; V = 128256
		step(1000, 0); for (k = 0; k < 199; k++) step(1, 1000 + k)
		t = $8 - $6; mfu = F / (t * 989e12); mbu = B / (t * 3.35e12)
		d = ($30 - F) / F; e = ($31 - B) / B; g = ($32 - mfu) / mfu; i = ($33 - mbu) / mbu
		ok = d * d < 1e-20 && e * e < 1e-20 && g * g < 1e-18 && i * i < 1e-18
		printf "%s MFU %.4f MBU %.4f (%.6g FLOPs, %.6g B over %.9g s)", ok ? "ok" : "bad", mfu, mbu, F, B, t }' "$tmp/mfu/instances.csv")
printed=$(grep -o 'MFU [0-9.]*  MBU [0-9.]*' "$tmp/mfu.out" | tr -s ' ')
case "$hand" in
ok*"$printed "*) ok "MFU and MBU by hand: $hand" ;;
*) bad "MFU/MBU: hand $hand, printed '$printed', csv $(cut -d, -f8,30-33 "$tmp/mfu/instances.csv" | tail -1)" ;;
esac
for k in mfu mbu; do
	[ "$(grep "^$k," "$tmp/mfu/summary.csv" | cut -d, -f2)" = "$(tail -1 "$tmp/mfu/instances.csv" | cut -d, -f$([ $k = mfu ] && echo 32 || echo 33))" ] \
		|| bad "summary $k is not the one instance's"
done

# cost and carbon: an offer's price per GPU (aws-p5.48xlarge: $55.04/h for
# 8 GPUs) with its billing (per second, 60 s minimum: the 19 s run pays 60 s);
# carbon = facility energy x 481 g/kWh
"$exe" run "$scen/small.yaml" -o "$tmp/cost" --csv --quiet --set instances.0.price=aws-p5.48xlarge >/dev/null 2>"$tmp/err" || bad "price run: $(cat "$tmp/err")"
costs=$(tail -n +2 "$tmp/cost/instances.csv" | cut -d, -f15 | sort -u)
e=$(grep '^energy_j,' "$tmp/cost/summary.csv" | cut -d, -f2); c=$(grep '^carbon_kg,' "$tmp/cost/summary.csv" | cut -d, -f2)
[ "$costs" = "0.11466666666666667" ] && awk -v e="$e" -v c="$c" 'BEGIN { d = c * 3.6e9 / 481 - e; if (d < 0) d = -d; exit !(d < 1e-6 * e) }' \
	&& ok "offer price with per-second billing and a 60 s minimum; carbon at 481 g/kWh" || bad "cost: $costs, energy $e, carbon $c"
"$exe" run "$scen/small.yaml" -o "$tmp/cost3" --csv --quiet --set instances.0.price=cheapest >/dev/null 2>&1
"$exe" run "$scen/small.yaml" -o "$tmp/cost4" --csv --quiet --set instances.0.price=runpod-h100-sxm >/dev/null 2>&1
cmp -s "$tmp/cost3/instances.csv" "$tmp/cost4/instances.csv" && ok "price: cheapest picks the lowest per-GPU H100 offer" \
	|| bad "cheapest: $(cut -d, -f15 "$tmp/cost3/instances.csv" | tr '\n' ' ') vs $(cut -d, -f15 "$tmp/cost4/instances.csv" | tr '\n' ' ')"
"$exe" run "$scen/small.yaml" -o "$tmp/cost2" --set instances.0.price=aws-p5.48xlarg >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "aws-p5.48xlarge" "$tmp/err" && grep -q "instances\[0\].price" "$tmp/err" \
	&& ok "unknown price offer: did you mean" || bad "unknown offer: rc=$rc $(cat "$tmp/err")"

# node failures: every instance of the node fails at the same moment, its
# GPUs stay down (replacements go elsewhere, or requests are rejected when no
# node has room), and every request still ends exactly once
"$exe" run "$src/examples/failures.yaml" -o "$tmp/nf" --csv --quiet --set failures.mtbf=0 \
	--set failures.node_mtbf=15min --set cluster.0.count=2 >/dev/null 2>"$tmp/err" || bad "node failure run: $(cat "$tmp/err")"
ends=$(awk -v a="$(fs nf completed)" -v b="$(fs nf rejected)" -v c="$(fs nf failed)" -v d="$(fs nf unfinished)" 'BEGIN { print a + b + c + d }')
same=$(tail -n +2 "$tmp/nf/instances.csv" | awk -F, '$22 >= 0 { if ($5 in t && t[$5] != $22) bad = 1; t[$5] = $22 } END { print bad ? "no" : "yes" }')
[ "$(fs nf node_failures)" -ge 1 ] && [ "$ends" = "$(fs nf requests)" ] && [ "$same" = yes ] \
	&& ok "node failures: $(fs nf node_failures) nodes, their instances fail together, every request ends once" \
	|| bad "node failures: $(fs nf node_failures) ends=$ends same=$same"

# spot: reclaims with a two-minute warning drain the instance while a
# replacement starts; nothing is lost and spot pays less than on demand
"$exe" run "$src/examples/failures.yaml" -o "$tmp/spot" --csv --quiet --set failures.mtbf=0 \
	--set instances.0.price=gcp-a3-highgpu-8g --set instances.0.spot=true --set failures.spot_mtbr=10min >/dev/null 2>"$tmp/err" || bad "spot run: $(cat "$tmp/err")"
"$exe" run "$src/examples/failures.yaml" -o "$tmp/od" --csv --quiet --set failures.mtbf=0 \
	--set instances.0.price=gcp-a3-highgpu-8g >/dev/null 2>&1
[ "$(fs spot spot_reclaims)" -gt 0 ] && [ "$(fs spot completed)" = "$(fs spot requests)" ] \
	&& awk -v a="$(fs spot cost_usd)" -v b="$(fs od cost_usd)" 'BEGIN { exit !(a < b) }' \
	&& ok "spot: $(fs spot spot_reclaims) reclaims, all requests done, \$$(fs spot cost_usd) vs \$$(fs od cost_usd) on demand" \
	|| bad "spot: $(fs spot spot_reclaims) reclaims $(fs spot completed)/$(fs spot requests) cost $(fs spot cost_usd) vs $(fs od cost_usd)"

# a spot / on-demand mix (AWS-style): base 1 on demand, then 50% of the
# rest rounded up: the four replicas go on demand, on demand, spot, on
# demand; replacements keep the mix (every live set of replicas keeps at
# least base + ceil(50% of the rest) on demand at each start)
"$exe" run "$src/examples/failures.yaml" -o "$tmp/mix" --csv --quiet --set failures.mtbf=0 \
	--set instances.0.price=gcp-a3-highgpu-8g --set instances.0.spot=true --set failures.spot_mtbr=10min \
	--set instances.0.on_demand_base=1 --set instances.0.on_demand_percent=50 >/dev/null 2>"$tmp/err" || bad "spot mix: $(cat "$tmp/err")"
# (the spot flag is column 27 of /instances; replacements of the
# reclaimed spot replica are spot again, the on-demand share being kept)
mix=$(awk -F, 'NR == 1 && $27 != "spot" { exit } NR > 1 { printf "%s", $27 }' "$tmp/mix/instances.csv")
case "$mix" in 0010*) ;; *) mix=bad ;; esac
[ "$mix" != bad ] && [ -z "$(printf '%s' "${mix#0010}" | tr -d 1)" ] && [ -n "${mix#0010}" ] \
	&& [ "$(fs mix completed)" = "$(fs mix requests)" ] && [ "$(fs mix spot_reclaims)" -gt 0 ] \
	&& awk -v a="$(fs spot cost_usd)" -v m="$(fs mix cost_usd)" -v b="$(fs od cost_usd)" 'BEGIN { exit !(a < m && m < b) }' \
	&& ok "spot mix: on demand, on demand, spot, on demand; cost between all-spot and on demand (\$$(fs mix cost_usd))" \
	|| bad "spot mix: $(cut -d, -f1,6,8,27 "$tmp/mix/instances.csv" | tr '\n' ' ') cost $(fs mix cost_usd)"
"$exe" run "$src/examples/failures.yaml" -o "$tmp/mix2" --set instances.0.on_demand_base=1 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "instances\[0\].on_demand_base: an on-demand share needs spot: true" "$tmp/err" \
	&& ok "an on-demand share needs spot" || bad "on_demand_base without spot: rc=$rc $(cat "$tmp/err")"

# gpu: cheapest picks the kind with a profile that holds a replica at the
# lowest price per replica-hour (shipped prices per GPU-hour: RTX-4090
# 0.74, L4 0.805, A10G 1.006 (spot 0.30), L40S 1.09, A100-80GB-SXM 1.59,
# H100-SXM 3.49): an 8B model on one GPU -> RTX-4090; on spot -> A10G;
# 70B on 4 GPUs (35 GB each) -> L40S; in a cluster of H100 and A100-80GB
# nodes -> A100-80GB-SXM
gc() { # scenario suffix, extra --set arguments...
	local out=$1; shift
	"$exe" run "$scen/gpu_cheapest$out.yaml" -o "$tmp/gc$out" --csv --quiet --force "$@" >/dev/null 2>"$tmp/err" \
		|| { echo "error: $(cat "$tmp/err")"; return; }
	tail -n +2 "$tmp/gc$out/instances.csv" | cut -d, -f2 | sort -u | tr '\n' ' '
}
g1=$(gc ""); g2=$(gc "" --set instances.0.spot=true); g3=$(gc "" --set instances.0.model=Llama-3.1-70B --set instances.0.tp=4)
g4=$(gc _cluster)
[ "$g1|$g2|$g3|$g4" = "RTX-4090 |A10G |L40S |A100-80GB-SXM " ] \
	&& ok "gpu: cheapest chooses RTX-4090, A10G on spot, L40S for 70B, A100 in an H100/A100 cluster" \
	|| bad "gpu cheapest: $g1|$g2|$g3|$g4"
"$exe" run "$scen/gpu_cheapest_cluster.yaml" -o "$tmp/gc5" --set instances.0.model=GPT-3-175B >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "instances\[0\].gpu: no GPU kind with a profile and an offer in the cluster holds GPT-3-175B on 1 GPUs" "$tmp/err" \
	&& ok "gpu: cheapest with nothing that fits" || bad "gpu cheapest nothing fits: rc=$rc $(cat "$tmp/err")"
# several groups choosing from one price file (its profiles read once for
# all of them), each by its own model, tp and spot, beside a fixed kind;
# 70B on 4 spot GPUs: A100-40GB-SXM at $0.756 (A10G's 4 x 24 GB cannot
# hold its 141 GB of weights)
"$exe" run "$scen/gpu_cheapest_groups.yaml" -o "$tmp/gcg" --csv --quiet >/dev/null 2>"$tmp/err"; rc=$?
g9=$(tail -n +2 "$tmp/gcg/instances.csv" | cut -d, -f2 | tr '\n' ' ')
[ $rc -eq 0 ] && [ "$g9" = "RTX-4090 RTX-4090 L40S H100-SXM A10G A100-40GB-SXM " ] \
	&& ok "gpu: cheapest per group: RTX-4090, L40S for 70B, A10G and A100-40GB on spot" \
	|| bad "gpu cheapest groups: rc=$rc $g9 $(cat "$tmp/err")"
# gpu_from: cheapest among listed kinds (L40S 1.09 < H100 3.49); a listed
# kind with no offer is an error
g6=$(gc "" --set "instances.0.gpu_from=L40S|H100-SXM"); g7=$(gc "" --set "instances.0.gpu_from=H100-SXM")
"$exe" run "$scen/gpu_cheapest.yaml" -o "$tmp/gc8" --set "instances.0.gpu_from=L40S|H100-SXN" >/dev/null 2>"$tmp/err"; rc=$?
[ "$g6|$g7" = "L40S |H100-SXM " ] && [ $rc -eq 2 ] && grep -q "instances\[0\].gpu_from: no offer in the price file for 'H100-SXN'" "$tmp/err" \
	&& ok "gpu_from: L40S among L40S|H100-SXM, H100-SXM alone, a typo refused" || bad "gpu_from: $g6|$g7 rc=$rc $(cat "$tmp/err")"

# training traffic on the links (tests/data/scenarios/job_traffic.yaml):
# the two jobs' checkpoints (98 GB each) share the 50 GB/s storage ingress
# (3.92 s, not 1.96 s: GPU time held 8 x 3.92 = 31.36 s), and each of the
# 100 iterations' NVLink all-reduces adds its 2 us of path latency, the
# checkpoint its 104.5 us: JCT 1.96 + 0.0003 s longer than bytes/bandwidth
for t in links bandwidth; do
	"$exe" run "$scen/job_traffic.yaml" -o "$tmp/jt_$t" --csv --quiet --set jobs.traffic=$t >/dev/null 2>"$tmp/err" \
		|| bad "job traffic $t: $(cat "$tmp/err")"
done
jt=$(paste -d, "$tmp/jt_links/jobs.csv" "$tmp/jt_bandwidth/jobs.csv" | awk -F, 'NR > 1 { n = NF / 2
	d = $13 - $(n + 13); if (d < 1.96025 || d > 1.96035 || $18 < 31.3608 || $18 > 31.3609 || $(n + 18) != 15.68) bad = 1; k++ }
	END { print (bad || k != 2) ? "bad" : "ok" }')
sto=$(awk -F, '$2 == "storage" && $5 > 0 { print $5 "," $6 }' "$tmp/jt_links/links.csv")
[ "$jt" = ok ] && [ "$sto" = "196000000000,3.92" ] \
	&& ok "training traffic: checkpoints share the storage ingress, all-reduces cross NVLink" \
	|| bad "job traffic: $jt $sto $(cut -d, -f1,13,18 "$tmp/jt_links/jobs.csv" "$tmp/jt_bandwidth/jobs.csv" | tr '\n' ' ')"

# run: outputs exist, are complete, and are deterministic
"$exe" run "$scen/small.yaml" -o "$tmp/a" --csv --quiet >"$tmp/a.out" 2>&1 || bad "run small a: $(cat "$tmp/a.out")"
"$exe" run "$scen/small.yaml" -o "$tmp/b" --csv --quiet >/dev/null 2>&1 || bad "run small b"
for f in report.h5 results.sqlite requests.csv instances.csv timeseries.csv summary.csv; do
	[ -s "$tmp/a/$f" ] || bad "missing $f"
done
ls "$tmp/a" | grep -q '\.tmp$' && bad "temporary file left"
same=1
for f in report.h5 requests.csv instances.csv timeseries.csv summary.csv; do
	cmp -s "$tmp/a/$f" "$tmp/b/$f" || { same=0; bad "determinism: $f differs"; }
done
[ $same -eq 1 ] && ok "byte-identical outputs for the same seed"
"$exe" run "$scen/small.yaml" -o "$tmp/c" --csv --quiet --seed 12 >/dev/null 2>&1
cmp -s "$tmp/a/requests.csv" "$tmp/c/requests.csv" && bad "--seed does not change the workload" || ok "--seed varies the workload"

# records spilled to disk (a long run) give the same outputs byte for byte
# (report.h5 differs: it holds the effective config, with the override)
"$exe" run "$scen/small.yaml" -o "$tmp/sp" --csv --quiet --set output.records_in_memory=7 >/dev/null 2>&1 || bad "run small spilled"
same=1
for f in requests.csv instances.csv timeseries.csv summary.csv classes.csv; do
	cmp -s "$tmp/a/$f" "$tmp/sp/$f" || { same=0; bad "spilled records: $f differs"; }
done
[ $same -eq 1 ] && ok "records spilled to disk give identical outputs"

# BurstGPT logs failed requests with 0 response tokens: workload.zero_output
for mode in one skip fail; do
	printf 'name: z\ninstances: [{gpu: H100-SXM}]\nworkload: {kind: auto, path: %s, zero_output: %s}\n' \
		"$fmt/burstgpt.csv" "$mode" > "$tmp/z_$mode.yaml"
	"$exe" run "$tmp/z_$mode.yaml" -o "$tmp/z_$mode" --csv --quiet >/dev/null 2>&1 || bad "zero_output $mode run"
done
zf() { grep "^$2," "$tmp/z_$1/summary.csv" | cut -d, -f2; }
[ "$(zf one requests)/$(zf one completed)/$(zf one trace_zero_output)" = "3/3/1" ] \
	&& [ "$(sed -n 3p "$tmp/z_one/requests.csv" | cut -d, -f7)" = "1" ] \
	&& ok "zero_output one: served with one token" || bad "zero_output one: $(cat "$tmp/z_one/summary.csv" | head -5)"
[ "$(zf skip requests)/$(zf skip completed)/$(zf skip trace_zero_output)" = "2/2/1" ] \
	&& ok "zero_output skip: dropped and counted" || bad "zero_output skip"
[ "$(zf fail requests)/$(zf fail completed)/$(zf fail failed)" = "3/2/1" ] \
	&& [ "$(sed -n 3p "$tmp/z_fail/requests.csv" | cut -d, -f10,13)" = "2,5" ] \
	&& ok "zero_output fail: failed at arrival, reason 5" || bad "zero_output fail: $(sed -n 3p "$tmp/z_fail/requests.csv")"

# conservation: every arrived request ends exactly once
n=$(($(wc -l < "$tmp/a/requests.csv") - 1))
[ "$n" -eq 300 ] && ok "300 requests recorded" || bad "requests.csv has $n rows"

# run ids hash the contents of what a run reads, not its paths: a copy of
# the data folder (LLMSIM_DATA_DIR) gives the same id, one profile value
# changed in another copy a new one; a copy of a scenario and its trace
# elsewhere the same id, one trace token changed a new one; likewise a perf
# table folder. The seed and the configuration count as before.
rid() { sed -n '1s/.*(run id \([0-9a-f]\{16\}\)).*/\1/p'; }
for d in d1 d2; do
	mkdir -p "$tmp/$d" && cp -r "$src/calibrate/profiles" "$src/calibrate/models.yaml" "$tmp/$d/"
done
sed -i 's/^mbu: 0.88$/mbu: 0.87/' "$tmp/d2/profiles/H100-SXM.yaml"
i0=$("$exe" check "$scen/small.yaml" | rid)
i1=$(LLMSIM_DATA_DIR="$tmp/d1" "$exe" check "$scen/small.yaml" | rid)
i2=$(LLMSIM_DATA_DIR="$tmp/d2" "$exe" check "$scen/small.yaml" | rid)
i3=$("$exe" check "$scen/small.yaml" --seed 12 | rid)
i4=$("$exe" check "$scen/small.yaml" --set data_dir="$tmp/d1" | rid)
mkdir -p "$tmp/q/data/azure_llm_2023"
qt=data/azure_llm_2023/AzureLLMInferenceTrace_conv_1815-1845.csv
cp "$src/examples/quickstart.yaml" "$tmp/q/" && cp "$src/examples/$qt" "$tmp/q/$qt"
q0=$("$exe" check "$src/examples/quickstart.yaml" | rid)
q1=$("$exe" check "$tmp/q/quickstart.yaml" | rid)
q2=$("$exe" check "$tmp/q/quickstart.yaml" --set workload.path="$tmp/q/$qt" | rid)
sed -i '2s/,\([0-9]*\),/,1\1,/' "$tmp/q/$qt" # one prompt length: 1 in front
q3=$("$exe" check "$tmp/q/quickstart.yaml" | rid)
tbl=calibrate/perf/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16
cp -r "$src/$tbl" "$tmp/t1" && cp -r "$src/$tbl" "$tmp/t2"
sed -i '2s/^\([a-z_]*\),1,/\1,1,1/' "$tmp/t2/tp1/dense.csv" # its first time: 1 in front
tq="instances: [{model: Llama-3.1-8B, gpu: RTX-4090, perf: table, perf_table: %s}]\nworkload: {count: 10}\n"
t0=$(printf "$tq" "$src/$tbl" > "$tmp/tq0.yaml" && "$exe" check "$tmp/tq0.yaml" | rid)
t1=$(printf "$tq" "$tmp/t1" > "$tmp/tq1.yaml" && "$exe" check "$tmp/tq1.yaml" | rid)
t2=$(printf "$tq" "$tmp/t2" > "$tmp/tq2.yaml" && "$exe" check "$tmp/tq2.yaml" | rid)
ids="data $i0 $i1 $i2, seed $i3, data_dir $i4, trace $q0 $q1 $q2 $q3, table $t0 $t1 $t2"
[ -n "$i0" ] && [ "$i1" = "$i0" ] && [ "$i4" = "$i0" ] && [ "$i2" != "$i0" ] && [ -n "$i2" ] && [ "$i3" != "$i0" ] \
	&& [ -n "$q0" ] && [ "$q1" = "$q0" ] && [ "$q2" = "$q0" ] && [ "$q3" != "$q0" ] && [ -n "$q3" ] \
	&& [ -n "$t0" ] && [ "$t1" = "$t0" ] && [ "$t2" != "$t0" ] && [ -n "$t2" ] \
	&& ok "run ids follow the contents of profiles, traces and perf tables, not their paths" \
	|| bad "run ids: $ids"
LLMSIM_DATA_DIR="$tmp/d2" "$exe" run "$scen/small.yaml" -o "$tmp/rid" --quiet > "$tmp/rid.out" 2>&1
grep -q "^run $i2 " "$tmp/rid.out" && [ "$(sqlite3 "$tmp/rid/results.sqlite" "SELECT run_id FROM runs;")" = "$i2" ] \
	&& ok "the run records the id check gives" || bad "run id of the run: $(head -1 "$tmp/rid.out")"

# SLO attainment is defined only against declared SLOs: small.yaml has no
# class, so no target - "no SLO declared" on stdout, nan in summary.csv,
# slo_met -1 on every request. With one class of a TTFT target and one
# without, the summary counts the first class alone, and the second has no
# attainment of its own.
grep -q '^  SLO        no SLO declared$' "$tmp/a.out" \
	&& grep -qx 'slo_attainment,nan,' "$tmp/a/summary.csv" && grep -qx 'goodput_rps,nan,1/s' "$tmp/a/summary.csv" \
	&& [ "$(awk -F, 'NR > 1 { print $14 }' "$tmp/a/requests.csv" | sort -u)" = "-1" ] \
	&& ok "no class declares a target: no SLO declared, slo_attainment nan, slo_met -1" \
	|| bad "no SLO: $(grep SLO "$tmp/a.out"), $(grep -E '^(slo_attainment|goodput_rps),' "$tmp/a/summary.csv" | tr '\n' ' ')"
{ cat "$scen/small.yaml"; printf 'classes:\n  - {name: a, share: 0.5, ttft: 30ms}\n  - {name: b, share: 0.5}\n'; } > "$tmp/slo.yaml"
"$exe" run "$tmp/slo.yaml" -o "$tmp/slo" --csv > "$tmp/slo.out" 2>&1 || bad "classes run: $(cat "$tmp/slo.out")"
a=$(awk -F, '$1 == "a" { print $12 }' "$tmp/slo/classes.csv")
b=$(awk -F, '$1 == "b" { print $9 "/" $10 "/" $11 "/" $12 "/" $13 }' "$tmp/slo/classes.csv")
met=$(awk -F, 'NR > 1 && $11 == 0 { n++; m += $14 } NR > 1 && $11 == 1 && $14 != -1 { x = 1 } END { if (!x) printf "%.17g", m / n }' "$tmp/slo/requests.csv")
att=$(grep '^slo_attainment,' "$tmp/slo/summary.csv" | cut -d, -f2)
[ "$b" = "nan/nan/nan/nan/nan" ] && [ -n "$met" ] && [ "$att" = "$a" ] \
	&& awk -v a="$att" -v m="$met" 'BEGIN { d = a - m; exit !(d * d < 1e-24 && a > 0 && a < 1) }' \
	&& grep -q '^    b .* no SLO declared ' "$tmp/slo.out" \
	&& ok "a class without a target: left out of slo_attainment ($att, class a's), its own attainment nan" \
	|| bad "classes: a $a, b $b, met $met, summary $att, $(grep -A2 SLO "$tmp/slo.out")"

# per-request resource use: every step's time is shared out over its
# requests by tokens, so their GPU-seconds add up to the instances' busy time
g=$(awk -F, 'NR > 1 { g += $18 } END { printf "%.6f", g }' "$tmp/a/requests.csv")
b=$(awk -F, 'NR > 1 { b += $9 * $4 } END { printf "%.6f", b }' "$tmp/a/instances.csv")
[ "$g" = "$b" ] && awk -F, 'NR > 1 && ($19 > 1 || $20 > 1 || $19 > $20 || $21 <= 0) { bad = 1 } END { exit bad }' "$tmp/a/requests.csv" \
	&& ok "per-request GPU time sums to the instances' busy time ($g GPU-s)" || bad "per-request GPU time $g vs busy $b"

# integer edge: token counts of 2^31 - 1 (the most a trace may hold) add
# up in 64 bits - prompt + output is 2^32 - 2, beyond the context - so
# those lines are refused (or skipped) instead of wrapping into small
# numbers; one more (2^31) is "too large" at the input (bad_inputs)
big=$src/tests/data/cli/int32_max_tokens.csv
err=$("$exe" run "$src/tests/bad_inputs/trace.yaml" -o "$tmp/big" --quiet \
	--set workload.path="$big" 2>&1 >/dev/null); rc=$?
case "$rc $err" in
"2 "*"int32_max_tokens.csv:2:3: prompt_tokens: prompt 2147483647 + output 2147483647 tokens exceed"*)
	ok "2^31 - 1 tokens: refused with file, line and key" ;;
*) bad "2^31 - 1 tokens: exit $rc: $err" ;;
esac
"$exe" run "$src/tests/bad_inputs/trace.yaml" -o "$tmp/big" --quiet --csv \
	--set workload.path="$big" --set workload.on_error=skip >/dev/null 2>&1
if grep -qx 'trace_lines_skipped,3,' "$tmp/big/summary.csv" && grep -qx 'requests,1,' "$tmp/big/summary.csv"; then
	ok "2^31 - 1 tokens: three lines skipped, the one that fits served"
else
	bad "2^31 - 1 tokens with on_error: skip: $(grep -E '^(requests|trace_lines_skipped),' "$tmp/big/summary.csv" 2>&1)"
fi

# unfinished requests: one warning line on stderr, the count in the summary,
# exit 0 (the simulation is complete as asked); none on a clean run. At
# duration 5s, 99 of small.yaml's requests have arrived and 44 are in flight.
"$exe" run "$scen/small.yaml" -o "$tmp/cut" --csv --quiet --set duration=5s >/dev/null 2>"$tmp/err"; rc=$?
want="llmsim: warning: 44 of 99 requests unfinished at the end of the run (it stopped at duration 5s with them in flight)"
st3=$(tail -n +2 "$tmp/cut/requests.csv" | awk -F, '$10 == 3 { n++ } END { print n + 0 }')
[ $rc -eq 0 ] && [ "$(cat "$tmp/err")" = "$want" ] && grep -qx 'unfinished,44,' "$tmp/cut/summary.csv" && [ "$st3" = 44 ] \
	&& ok "unfinished requests: one warning line, summary unfinished 44" \
	|| bad "unfinished warning: rc=$rc status-3 rows $st3, stderr: $(cat "$tmp/err")"
"$exe" run "$scen/small.yaml" -o "$tmp/clean" --quiet >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && ok "a run that finishes every request warns of nothing" \
	|| bad "clean run: rc=$rc stderr: $(cat "$tmp/err")"
# an overloaded run (small.yaml at 200 req/s, ten times what its two
# replicas serve): one warning line naming the worst instance, the count in
# the summary, exit 0
"$exe" run "$scen/small.yaml" -o "$tmp/over" --csv --quiet --set workload.rate=200 \
	--set workload.count=5000 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && [ "$(grep -c . "$tmp/err")" = 1 ] &&
	grep -q '^llmsim: warning: 2 of 2 instances overloaded: the waiting queue of instance [01] grew from [0-9]* to [0-9]* requests' "$tmp/err" &&
	grep -qx 'overloaded_instances,2,' "$tmp/over/summary.csv" \
	&& ok "an overloaded run: one warning line, summary overloaded_instances 2" \
	|| bad "overload warning: rc=$rc $(cat "$tmp/err")"

# docs/output.md defines every summary field, in the table of its "Summary
# fields" section (first column; ttft_{mean,p50}_s stands for both)
documented=$(sed -n '/^## Summary fields$/,/^### /p' "$src/docs/output.md" | awk -F'|' '/^\| `/ { print $2 }' \
	| grep -o '`[a-z0-9_{},]*`' | tr -d '`' | while read -r n; do eval "printf '%s\n' $n"; done | sort)
missing=$(cut -d, -f1 "$tmp/a/summary.csv" | tail -n +2 | sort | comm -23 - <(printf '%s\n' "$documented"))
[ -z "$missing" ] && [ "$(cut -d, -f1 "$tmp/a/summary.csv" | tail -n +2 | wc -l)" -gt 50 ] \
	&& ok "docs/output.md defines every summary field" || bad "summary fields not in docs/output.md: $missing"

# golden summary (regenerate with: llmsim run tests/data/scenarios/small.yaml --csv)
if cmp -s "$tmp/a/summary.csv" "$src/tests/golden/small_summary.csv"; then
	ok "golden summary"
else
	bad "golden summary differs:"; diff "$src/tests/golden/small_summary.csv" "$tmp/a/summary.csv" | head -20
fi

# one override grammar: a policy key set to a name switches the policy and
# drops the old one's parameters; NAME.name switches it too; a parameter on
# a plain name makes it a section (each of these was refused before)
eff() { "$exe" check "$@" 2>&1 | awk -v k="$key" '$0 ~ "^" k ":" { on = 1; next } on && /^[^ ]/ { exit } on'; }
key=adaptor
a1=$(eff "$src/examples/autoscaling.yaml" --set adaptor=static | tr -d ' \n')
a2=$(eff "$src/examples/autoscaling.yaml" --set adaptor.name=threshold --set adaptor.high=0.9 | tr -d ' \n')
a3=$(eff "$src/examples/autoscaling.yaml" --set adaptor=threshold --set adaptor.high=0.9 | tr -d ' \n')
key=scheduler
r1=$(eff "$src/examples/quickstart.yaml" --set scheduler.router.name=prefix_affinity --set scheduler.router.max_load=4 | tr -d ' \n')
[ "$a1" = "name:static" ] && [ "${a2#name:threshold}" != "$a2" ] && [ "$a2" = "$a3" ] \
	&& grep -q "high:0.9" <<<"$a2" && ! grep -q "stabilization\|target:" <<<"$a2" \
	&& grep -q "router:name:prefix_affinityblocks:2max_load:4" <<<"$r1" \
	&& ok "--set switches a policy by name and drops the old one's parameters" \
	|| bad "--set of policies: [$a1] [$a2] [$a3] [$r1]"

# progress off a terminal: status lines a log keeps, with the share of the
# input read (the generator's 20,000 requests here) never going back, done
# <= arrived <= 20,000, the last one's arrivals matching its share; none
# with --progress 0 or --quiet; a bad --progress refused
"$exe" run "$scen/small.yaml" -o "$tmp/prog" --set workload.count=20000 \
	--set output.sample_period=0 --progress 0.0001 >/dev/null 2>"$tmp/prog.err"
pl=$(awk '/^llmsim: progress/ { n++; p = $3 + 0; if (p < last) bad = 1; last = p
	done = $9; arr = $12; if (done > arr || arr > 20000) bad = 1
	if (p < 100 && (arr < 200 * (p - 1) || arr > 200 * (p + 1))) bad = 1 }
	END { print (n >= 2 && !bad) ? "ok" : "bad " n }' "$tmp/prog.err")
"$exe" run "$scen/small.yaml" -o "$tmp/prog" --force --progress 0 >/dev/null 2>"$tmp/prog0.err"
"$exe" run "$scen/small.yaml" -o "$tmp/prog" --force --quiet --progress 0.0001 >/dev/null 2>"$tmp/progq.err"
"$exe" run "$scen/small.yaml" -o "$tmp/prog" --force --progress soon >/dev/null 2>"$tmp/progb.err"; prc=$?
[ "$pl" = ok ] && [ ! -s "$tmp/prog0.err" ] && [ ! -s "$tmp/progq.err" ] && [ "$prc" = 2 ] \
	&& grep -q "progress: 'soon' is not a number of seconds" "$tmp/progb.err" \
	&& ok "progress off a terminal: status lines with the share read, off with --progress 0 and --quiet" \
	|| bad "progress: $pl rc=$prc $(head -c 300 "$tmp/prog.err") $(cat "$tmp/prog0.err" "$tmp/progq.err" "$tmp/progb.err" | head -3)"

echo "cli: $fails failure(s)"
[ "$fails" -eq 0 ]
