#!/bin/sh
# test_lora.sh - LoRA adapters (instances[].enable_lora, workload.lora;
# docs/lora.md) against hand computations, one H100 (PCIe 25 GB/s):
# - one Llama-3.1-8B adapter of rank 16 is r x sum(d_in + d_out) per layer
#   = 16 x (q 4096+4096, k 4096+1024, v 4096+1024, o 4096+4096, gate
#   4096+14336, up 4096+14336, down 14336+4096 = 81,920) x 32 layers
#   = 41,943,040 parameters = 83,886,080 B in bf16;
# - max_loras 1 at max_lora_rank 16 preallocates those 83,886,080 B: the
#   KV cache loses 83,886,080 / (16 tokens x 131,072 B) = 40 blocks;
# - the first request of an adapter (not in the host cache: read from
#   storage) waits for storage -> GPU: latencies storage 100 us + ToR 1 us
#   + NIC 2 us + host 0.5 us + PCIe 1 us = 104,500 ns, and 83,886,080 B /
#   25 GB/s (the PCIe link, the path's narrowest) = 3,355,443.2 -> 3,355,444
#   ns: 3,459,944 ns; a later request of the adapter still in its GPU slot
#   waits for nothing, so the two TTFTs differ by exactly that;
# - max_loras 1, max_cpu_loras 2, adapters A, B, A (named by the trace's
#   lora column, workload.lora_column): B evicts A
#   from the one GPU slot, and A comes back from the host cache: 1.5 us +
#   3,355,444 ns = 3,356,944 ns, 103,000 ns less than a storage read; the
#   waits add to lora_wait_s = 2 x 3,459,944 + 3,356,944 = 10,276,832 ns;
# - max_loras 1, two requests of adapters A and B at time 0 (named by the
#   trace): B is skipped until A's request leaves the batch (first
#   scheduled at A's finish); with max_loras 2 it starts before A's
#   request ends;
# - a JSONL trace with the key: A, null (the base model), A at 0, 10, 20 s
#   with max_loras 1: one load, from storage; 2 requests with an adapter;
#   the first A waits the 3,459,944 ns of the storage read more than the
#   second, which finds A still in its slot (the base request between
#   runs no adapter and evicts nothing);
# - 100 adapters named a0 .. a99 by 100 requests 10 s apart, the trace
#   played twice (repeat: 2): every request names one (200), and with one
#   slot and a host cache of one each is a load from storage (200 loads,
#   200 storage reads, 200 x 83,886,080 = 16,777,216,000 B): the names
#   number 100 distinct adapters past the first sizes of the name index,
#   and the repeat replays the names;
# - without enable_lora the keys stay out of the effective configuration.
set -u
exe=${LSIM_EXE:-build/llmsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
n=0
ok() { n=$((n + 1)); echo "ok - $*"; }
bad() { n=$((n + 1)); echo "FAIL - $*"; fails=$((fails + 1)); }
col() { # FILE ROW(1-based data row) COLUMN-NAME
	awk -F, -v r="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
		NR == r + 1 { print $k }' "$1"
}
ns() { awk -v t="$1" 'BEGIN { printf "%.0f", t * 1e9 }'; }
metric() { awk -F, -v m="$2" '$1 == m { print $2 }' "$1/summary.csv"; }

scen() { # NAME TRACE INSTANCE-KEYS WORKLOAD-KEYS
	cat > "$tmp/$1.yaml" <<EOF2
name: $1
seed: 1
cluster:
  - {gpu: H100-SXM, count: 1, gpus_per_node: 1}
network: {pcie_bw: 25GB/s, host_bw: 63GB/s}
instances:
  - {model: Llama-3.1-8B, gpu: H100-SXM$3}
workload: {kind: auto, path: $tmp/$2$4}
EOF2
	"$exe" run "$tmp/$1.yaml" -o "$tmp/$1" --csv --quiet >/dev/null 2>"$tmp/err" ||
		bad "run $1: $(cat "$tmp/err")"
}
printf 'arrival_s,prompt_tokens,output_tokens\n0,512,4\n10,512,4\n' > "$tmp/two.csv"
printf 'arrival_s,prompt_tokens,output_tokens,lora\n0,512,4,A\n10,512,4,B\n20,512,4,A\n' > "$tmp/aba.csv"
printf 'arrival_s,prompt_tokens,output_tokens,lora\n0,512,4,A\n0,512,4,B\n' > "$tmp/same.csv"
{
	echo '{"arrival_time": 0, "prompt_len": 512, "output_len": 4, "lora": "A"}'
	echo '{"arrival_time": 10, "prompt_len": 512, "output_len": 4, "lora": null}'
	echo '{"arrival_time": 20, "prompt_len": 512, "output_len": 4, "lora": "A"}'
} > "$tmp/a_base_a.jsonl"
awk 'BEGIN { print "arrival_s,prompt_tokens,output_tokens,lora"
	for (i = 0; i < 100; i++) printf "%d,512,4,a%d\n", 10 * i, i }' > "$tmp/hundred.csv"
L=", enable_lora: true"
scen base two.csv "" ""
scen one two.csv "$L, max_loras: 1" ", lora: {adapters: 1}"

bb=$(col "$tmp/base/instances.csv" 1 kv_blocks)
lb=$(col "$tmp/one/instances.csv" 1 kv_blocks)
[ "$((bb - lb))" -eq 40 ] && ok "KV blocks $bb -> $lb (-40 = 83,886,080 B / 2 MiB)" ||
	bad "KV blocks $bb -> $lb, expected -40"
b=$(metric "$tmp/one" lora_bytes)
[ "$b" = "83886080" ] && ok "one adapter load moves 83,886,080 B" || bad "lora_bytes $b, expected 83886080"
t0=$(ns "$(col "$tmp/one/requests.csv" 1 first_token)")
t1=$(ns "$(col "$tmp/one/requests.csv" 2 first_token)")
[ $((t0 - (t1 - 10000000000))) -eq 3459944 ] &&
	ok "TTFT of the adapter's first request $t0 ns = second's $((t1 - 10000000000)) + 3,459,944 (storage -> GPU copy)" ||
	bad "TTFTs $t0 and $((t1 - 10000000000)) ns differ by $((t0 - t1 + 10000000000)), expected 3459944"
[ "$(metric "$tmp/one" lora_loads) $(metric "$tmp/one" lora_storage_reads) $(metric "$tmp/one" lora_delayed_requests)" = "1 1 1" ] &&
	ok "one load, one storage read, one request delayed" ||
	bad "loads/storage reads/delayed: $(metric "$tmp/one" lora_loads) $(metric "$tmp/one" lora_storage_reads) $(metric "$tmp/one" lora_delayed_requests)"

scen aba aba.csv "$L, max_loras: 1, max_cpu_loras: 2" ", lora_column: lora"
[ "$(metric "$tmp/aba" lora_loads) $(metric "$tmp/aba" lora_storage_reads)" = "3 2" ] &&
	ok "adapters A, B, A: 3 loads, 2 from storage" ||
	bad "loads $(metric "$tmp/aba" lora_loads), storage reads $(metric "$tmp/aba" lora_storage_reads), expected 3 2"
a0=$(ns "$(col "$tmp/aba/requests.csv" 1 first_token)")
a2=$(( $(ns "$(col "$tmp/aba/requests.csv" 3 first_token)") - 20000000000 ))
[ $((a0 - a2)) -eq 103000 ] && ok "A again from the host cache: TTFT 103,000 ns below a storage read" ||
	bad "TTFT $a0 vs $a2: differ by $((a0 - a2)), expected 103000"
w=$(ns "$(metric "$tmp/aba" lora_wait_s)")
[ "$w" = "10276832" ] && ok "lora_wait_s 10,276,832 ns" || bad "lora_wait_s $w ns, expected 10276832"

scen slot1 same.csv "$L, max_loras: 1, max_cpu_loras: 2" ", lora_column: lora"
scen slot2 same.csv "$L, max_loras: 2, max_cpu_loras: 2" ", lora_column: lora"
f0=$(col "$tmp/slot1/requests.csv" 1 finish)
s1=$(col "$tmp/slot1/requests.csv" 2 first_scheduled)
[ "$f0" = "$s1" ] && ok "max_loras 1: B's request first scheduled at A's finish ($s1 s)" ||
	bad "max_loras 1: B scheduled at $s1, A finished at $f0"
f0=$(col "$tmp/slot2/requests.csv" 1 finish)
s1=$(col "$tmp/slot2/requests.csv" 2 first_scheduled)
awk -v a="$s1" -v b="$f0" 'BEGIN { exit !(a < b) }' &&
	ok "max_loras 2: B's request starts ($s1 s) before A's ends ($f0 s)" ||
	bad "max_loras 2: B scheduled at $s1, A finished at $f0"

scen jsonl a_base_a.jsonl "$L, max_loras: 1" ", lora_column: lora"
[ "$(metric "$tmp/jsonl" lora_requests) $(metric "$tmp/jsonl" lora_loads) $(metric "$tmp/jsonl" lora_storage_reads)" = "2 1 1" ] &&
	ok "JSONL A, null, A: 2 requests with an adapter, 1 load, 1 from storage" ||
	bad "JSONL requests/loads/storage reads: $(metric "$tmp/jsonl" lora_requests) $(metric "$tmp/jsonl" lora_loads) $(metric "$tmp/jsonl" lora_storage_reads), expected 2 1 1"
j0=$(ns "$(col "$tmp/jsonl/requests.csv" 1 first_token)")
j2=$(( $(ns "$(col "$tmp/jsonl/requests.csv" 3 first_token)") - 20000000000 ))
[ $((j0 - j2)) -eq 3459944 ] && ok "JSONL: the first A's TTFT is 3,459,944 ns above the second's" ||
	bad "JSONL TTFTs $j0 and $j2 ns differ by $((j0 - j2)), expected 3459944"

scen hundred hundred.csv "$L, max_loras: 1" ", lora_column: lora, repeat: 2"
[ "$(metric "$tmp/hundred" lora_requests) $(metric "$tmp/hundred" lora_loads) $(metric "$tmp/hundred" lora_storage_reads) $(metric "$tmp/hundred" lora_bytes)" = "200 200 200 16777216000" ] &&
	ok "100 named adapters played twice: 200 requests, 200 loads from storage, 16,777,216,000 B" ||
	bad "100 adapters x 2: requests/loads/storage reads/bytes $(metric "$tmp/hundred" lora_requests) $(metric "$tmp/hundred" lora_loads) $(metric "$tmp/hundred" lora_storage_reads) $(metric "$tmp/hundred" lora_bytes), expected 200 200 200 16777216000"

"$exe" check "$tmp/base.yaml" 2>/dev/null | grep -q "lora" &&
	bad "LoRA keys at their defaults are in the effective configuration" ||
	ok "LoRA keys at their defaults stay out of the effective configuration"
echo "1..$n"
[ "$fails" -eq 0 ]
