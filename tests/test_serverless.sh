#!/bin/sh
# test_serverless.sh - serverless serving (docs/serverless.md) against
# hand-computed times: a scale from zero whose TTFT is the weights' load
# (bytes / the path's bottleneck + the hops' latencies) + engine_init +
# the request's own prefill; keep-alive expiry at the exact time; a load
# from the host cache against one from remote storage; eviction order
# (least recently used idle instance first); a cache entry kept while a
# load reads it; a pipeline stage on another node; the serverless keys out
# of other scenarios' echo.
set -u
exe=${LSIM_EXE:-build/llmsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $*"; }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }
col() { # FILE ROW(1-based data row) COLUMN-NAME
	awk -F, -v r="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
		NR == r + 1 { print $k }' "$1"
}
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

# One H100 in one node. Remote storage 10 GB/s (latency 1 ms): the path
# storage, ToR down (1 us), NIC in (2 us), host (0.5 us, 63 GB/s), PCIe
# (1 us, 25 GB/s) is bottlenecked at 10 GB/s; the host cache's path is
# host, PCIe: 25 GB/s, 1.5 us.
# Requests (prompt 512, output 2): t=0 (scale from zero, remote load),
# t=20 (warm: its TTFT is the prefill alone), t=100 (the instance was
# scaled in at the second's finish + 30 s: a load from the host cache).
printf 'arrival_s,prompt_tokens,output_tokens\n0,512,2\n20,512,2\n100,512,2\n' > "$tmp/t.csv"
cat > "$tmp/one.yaml" <<EOF2
name: sl-one
cluster:
  - {name: n, gpu: H100-SXM, count: 1, gpus_per_node: 1, host_cache: 100GB}
network: {storage_bw: 10GB/s, storage_latency: 1ms, pcie_bw: 25GB/s, host_bw: 63GB/s}
instances:
  - {name: m8b, model: Llama-3.1-8B, gpu: H100-SXM, replicas: 0, serverless: true, keep_alive: 30s, engine_init: 2s}
workload: {kind: auto, path: $tmp/t.csv}
EOF2
"$exe" run "$tmp/one.yaml" -o "$tmp/one" --csv --quiet >/dev/null 2>"$tmp/err" || bad "run: $(cat "$tmp/err")"
# weights of Llama-3.1-8B: params 8.03e9 x bytes_per_param 2
# (calibrate/models.yaml) = 16.06e9 bytes
W=16.06e9
remote=$(awk -v w="$W" 'BEGIN { printf "%.9f", w / 10e9 + 0.001 + 0.000001 + 0.000002 + 0.0000005 + 0.000001 }')
host=$(awk -v w="$W" 'BEGIN { printf "%.9f", w / 25e9 + 0.0000005 + 0.000001 }')
r=$tmp/one/requests.csv
ttft() { awk -v a="$(col "$r" "$1" arrival)" -v f="$(col "$r" "$1" first_token)" 'BEGIN { printf "%.9f", f - a }'; }
t1=$(ttft 1) t2=$(ttft 2) t3=$(ttft 3)
want1=$(awk -v l="$remote" -v p="$t2" 'BEGIN { printf "%.9f", l + 2 + p }')
want3=$(awk -v l="$host" -v p="$t2" 'BEGIN { printf "%.9f", l + 2 + p }')
near "$t1" "$want1" 0.000000003 && ok "scale from zero: TTFT $t1 s = remote load $remote + engine_init 2 + prefill $t2" \
	|| bad "scale from zero: TTFT $t1, want $want1 (load $remote + 2 + $t2)"
near "$t3" "$want3" 0.000000003 && ok "from the host cache: TTFT $t3 s = host load $host + 2 + prefill $t2" \
	|| bad "host cache: TTFT $t3, want $want3"
i=$tmp/one/instances.csv
stop1=$(col "$i" 1 stop) fin2=$(col "$r" 2 finish)
near "$stop1" "$(awk -v f="$fin2" 'BEGIN { printf "%.9f", f + 30 }')" 0.000000002 \
	&& ok "keep-alive: scaled in at the last finish $fin2 + 30 s" || bad "keep-alive: stop $stop1, last finish $fin2"
s=$tmp/one/summary.csv
get() { grep "^$1," "$2" | cut -d, -f2; }
[ "$(get model_loads "$s")/$(get loads_remote "$s")/$(get loads_host "$s")/$(get requests_delayed_by_load "$s")/$(get keep_alive_scale_ins "$s")" = "2/1/1/2/2" ] \
	&& ok "2 model loads (1 remote, 1 host), 2 requests delayed, 2 keep-alive scale-ins" \
	|| bad "counts: $(grep -E '^(model_loads|loads_|requests_delayed|keep_alive)' "$s" | tr '\n' ' ')"
# GPU-seconds: one GPU held from each placement to its release
gs=$(awk -F, 'NR > 1 { s += $8 - $6 } END { printf "%.6f", s }' "$i")
near "$(get gpu_seconds "$s")" "$gs" 0.000001 && ok "gpu_seconds $gs = sum of (stop - start) x 1 GPU" \
	|| bad "gpu_seconds $(get gpu_seconds "$s") vs $gs"
# the cold-start delay of the first request: arrival to ready
near "$(get cold_start_max_s "$s")" "$(awk -v l="$remote" 'BEGIN { printf "%.9f", l + 2 }')" 0.000000002 \
	&& ok "cold-start delay = load + engine_init" || bad "cold_start_max_s $(get cold_start_max_s "$s")"

# Weight offload (cpu_offload_gb: 4 = 4,294,967,296 B stays in host
# memory; vLLM puts those parameters there before it loads them): from
# the host cache only W - 4 GiB = 11,765,032,704 B cross host link and
# PCIe, (W - 4 GiB) / 25e9 + 1.5 us; from remote storage all of W still
# leaves storage at 10 GB/s (the offloaded part as its own flow on the
# hops up to the NIC), so that load is as long as without offload to the
# latencies' nanoseconds. Every step also copies the 4 GiB (docs/memory.md),
# which the warm request's TTFT holds.
"$exe" run "$tmp/one.yaml" -o "$tmp/off" --csv --quiet --set instances.0.cpu_offload_gb=4 >/dev/null 2>"$tmp/err" \
	|| bad "offload run: $(cat "$tmp/err")"
r=$tmp/off/requests.csv
o1=$(ttft 1) o2=$(ttft 2) o3=$(ttft 3)
hoff=$(awk -v w="$W" 'BEGIN { printf "%.9f", (w - 4294967296) / 25e9 + 0.0000005 + 0.000001 }')
want3=$(awk -v l="$hoff" -v p="$o2" 'BEGIN { printf "%.9f", l + 2 + p }')
near "$o3" "$want3" 0.000000003 && ok "offload from the host cache: TTFT $o3 s = (W - 4 GiB) / PCIe $hoff + 2 + prefill $o2" \
	|| bad "offload host cache: TTFT $o3, want $want3 (load $hoff)"
want1=$(awk -v l="$remote" -v p="$o2" 'BEGIN { printf "%.9f", l + 2 + p }')
near "$o1" "$want1" 0.000005 && ok "offload from remote storage: TTFT $o1 s = the same storage-bound load $remote + 2 + prefill $o2" \
	|| bad "offload remote: TTFT $o1, want $want1"
r=$tmp/one/requests.csv

# Eviction: two GPUs, three models, keep-alive an hour. a at 0 and b at 20
# take both GPUs; a again at 40 (its idle time restarts); c at 60 finds
# no GPU: lru_idle evicts b (idle since ~20), not a (idle since ~40).
printf 'arrival_s,prompt_tokens,output_tokens,model\n0,100,2,a\n20,100,2,b\n40,100,2,a\n60,100,2,c\n' > "$tmp/e.csv"
cat > "$tmp/ev.yaml" <<EOF2
name: sl-evict
cluster:
  - {name: n, gpu: H100-SXM, count: 1, gpus_per_node: 2}
allocator: lru_idle
instances:
  - {name: a, model: Llama-3.1-8B, gpu: H100-SXM, replicas: 0, serverless: true, keep_alive: 1h}
  - {name: b, model: Llama-3.1-8B, gpu: H100-SXM, replicas: 0, serverless: true, keep_alive: 1h}
  - {name: c, model: Llama-3.1-8B, gpu: H100-SXM, replicas: 0, serverless: true, keep_alive: 1h}
workload: {kind: auto, path: $tmp/e.csv, model_column: model}
EOF2
"$exe" run "$tmp/ev.yaml" -o "$tmp/ev" --csv --quiet >/dev/null 2>"$tmp/err" || bad "evict run: $(cat "$tmp/err")"
i=$tmp/ev/instances.csv
# instances in creation order: a (0), b (1), c (2)
[ "$(col "$i" 2 stop)" = "60" ] && [ "$(col "$i" 3 start)" = "60" ] && [ "$(col "$i" 3 node)" = "0" ] \
	&& awk -v s="$(col "$i" 1 stop)" 'BEGIN { exit !(s > 3600) }' \
	&& [ "$(get evictions "$tmp/ev/summary.csv")" = "1" ] \
	&& ok "lru_idle evicts b (idle longest) at 60 s for c; a stays until its keep-alive" \
	|| bad "eviction: $(cut -d, -f1,3,6,7,8 "$i" | tr '\n' ' ') evictions $(get evictions "$tmp/ev/summary.csv")"
# without an evicting allocator, c waits for a GPU: b's keep-alive (an hour after 20 s)
"$exe" run "$tmp/ev.yaml" -o "$tmp/ev2" --csv --quiet --set allocator=first_fit >/dev/null 2>"$tmp/err" || bad "wait run: $(cat "$tmp/err")"
i=$tmp/ev2/instances.csv
[ "$(col "$i" 3 start)" = "$(col "$i" 2 stop)" ] && awk -v s="$(col "$i" 3 start)" 'BEGIN { exit !(s > 3620) }' \
	&& ok "first_fit never evicts: c starts when b's keep-alive frees its GPU" \
	|| bad "no eviction: $(cut -d, -f1,6,7,8 "$i" | tr '\n' ' ')"
# No overtaking (starvation): two GPUs held by a and b, both busy; big
# (tp 2) asks at 5 s and c (tp 1) at 6 s. When a ends, big evicts it but
# one GPU is no run of two: c may not take the freed GPU (it would keep
# big waiting, and with steady small traffic for ever). big starts when b
# ends (evicting it) and c when big's one request ends (evicting big).
printf 'arrival_s,prompt_tokens,output_tokens,model\n0,100,1000,a\n0.1,100,2000,b\n5,100,2,big\n6,100,2,c\n' > "$tmp/f.csv"
cat > "$tmp/fifo.yaml" <<EOF2
name: sl-fifo
cluster:
  - {name: n, gpu: H100-SXM, count: 1, gpus_per_node: 2}
allocator: lru_idle
instances:
  - {name: a, model: Llama-3.1-8B, gpu: H100-SXM, replicas: 0, serverless: true, keep_alive: 1h}
  - {name: b, model: Llama-3.1-8B, gpu: H100-SXM, replicas: 0, serverless: true, keep_alive: 1h}
  - {name: big, model: Llama-3.1-8B, gpu: H100-SXM, tp: 2, replicas: 0, serverless: true, keep_alive: 1h}
  - {name: c, model: Llama-3.1-8B, gpu: H100-SXM, replicas: 0, serverless: true, keep_alive: 1h}
workload: {kind: auto, path: $tmp/f.csv, model_column: model}
EOF2
"$exe" run "$tmp/fifo.yaml" -o "$tmp/fifo" --csv --quiet >/dev/null 2>"$tmp/err" || bad "fifo run: $(cat "$tmp/err")"
i=$tmp/fifo/instances.csv r=$tmp/fifo/requests.csv
# instances in creation order: a, b, big, c; requests a, b, big, c
[ "$(col "$i" 1 stop)" = "$(col "$r" 1 finish)" ] && [ "$(col "$i" 2 stop)" = "$(col "$r" 2 finish)" ] \
	&& [ "$(col "$i" 3 start)" = "$(col "$r" 2 finish)" ] && [ "$(col "$i" 3 tp)" = "2" ] \
	&& [ "$(col "$i" 4 start)" = "$(col "$r" 3 finish)" ] && [ "$(col "$i" 3 stop)" = "$(col "$r" 3 finish)" ] \
	&& [ "$(get evictions "$tmp/fifo/summary.csv")" = "3" ] \
	&& ok "first come, first placed: big starts at b's finish $(col "$r" 2 finish), c only after big (at $(col "$r" 3 finish)), not in a's freed GPU at $(col "$r" 1 finish)" \
	|| bad "fifo: $(cut -d, -f1,4,6,7,8 "$i" | tr '\n' ' ') finishes $(cut -d, -f5 "$r" | tr '\n' ' ')"

# A cache entry being read is pinned until its load ends. One node, two
# GPUs, no host cache, an SSD (20 GB/s, 100 us) that holds one checkpoint
# (20 GB). a at 0 loads from remote storage and is kept on the SSD; b at
# 10 loads from remote (done at 11.607 s); a at 11 reads the SSD (until
# 11.803 s). When b's load ends, the SSD would have to drop a to keep b:
# a is being read, so b is not kept. a at 30 (scaled in at 5 s idle) reads
# the SSD again: its TTFT is the SSD load (bytes / 20 GB/s + 100 + 0.5 +
# 1 us: SSD, host, PCIe) + the prefill (a at 33 is warm: its TTFT); b at
# 40 loads from remote. Dropping a in mid-read would have sent a at 30 to
# remote storage (1.607 s).
printf 'arrival_s,prompt_tokens,output_tokens,model\n0,512,2,a\n10,512,2,b\n11,512,2,a\n30,512,2,a\n33,512,2,a\n40,512,2,b\n' > "$tmp/p.csv"
cat > "$tmp/pin.yaml" <<EOF2
name: sl-pin
cluster:
  - {name: n, gpu: H100-SXM, count: 1, gpus_per_node: 2, ssd_bw: 20GB/s, ssd_capacity: 20GB}
network: {storage_bw: 10GB/s, storage_latency: 1ms, pcie_bw: 25GB/s, host_bw: 63GB/s}
instances:
  - {name: a, model: Llama-3.1-8B, gpu: H100-SXM, replicas: 0, serverless: true, keep_alive: 5s}
  - {name: b, model: Llama-3.1-8B, gpu: H100-SXM, replicas: 0, serverless: true, keep_alive: 5s}
workload: {kind: auto, path: $tmp/p.csv, model_column: model}
EOF2
"$exe" run "$tmp/pin.yaml" -o "$tmp/pin" --csv --quiet >/dev/null 2>"$tmp/err" || bad "pin run: $(cat "$tmp/err")"
r=$tmp/pin/requests.csv s=$tmp/pin/summary.csv
ssd=$(awk -v w="$W" 'BEGIN { printf "%.9f", w / 20e9 + 0.0001 + 0.0000005 + 0.000001 }')
warm=$(ttft 5)
want3=$(awk -v l="$ssd" -v p="$warm" 'BEGIN { printf "%.9f", l + p }')
want6=$(awk -v l="$remote" -v p="$warm" 'BEGIN { printf "%.9f", l + p }')
near "$(ttft 3)" "$want3" 0.000000003 && near "$(ttft 4)" "$want3" 0.000000003 && near "$(ttft 6)" "$want6" 0.000000003 \
	&& [ "$(get loads_ssd "$s")/$(get loads_remote "$s")" = "2/3" ] \
	&& ok "a pinned on the SSD while read: a at 30 loads from it again (TTFT $(ttft 4) = $ssd + $warm), b at 40 from remote" \
	|| bad "pin: TTFTs $(ttft 3) $(ttft 4) $(ttft 6), want $want3 $want3 $want6; loads ssd/remote $(get loads_ssd "$s")/$(get loads_remote "$s")"

# an allocator plugin built against ABI 3 (no evict op in its table)
# still loads and, like first_fit, never evicts
if [ -n "${LSIM_ABI3_PLUGIN:-}" ]; then
	sed "s|^allocator: lru_idle|allocator: {plugin: $LSIM_ABI3_PLUGIN}|" "$tmp/ev.yaml" > "$tmp/ev3.yaml"
	"$exe" run "$tmp/ev3.yaml" -o "$tmp/ev3" --csv --quiet >/dev/null 2>"$tmp/err" || bad "ABI 3 plugin run: $(cat "$tmp/err")"
	[ "$(cut -d, -f1,6,7,8 "$tmp/ev3/instances.csv")" = "$(cut -d, -f1,6,7,8 "$tmp/ev2/instances.csv")" ] \
		&& [ "$(get evictions "$tmp/ev3/summary.csv")" = "0" ] \
		&& ok "an ABI 3 allocator plugin loads and never evicts (same instances as first_fit)" \
		|| bad "ABI 3 plugin: $(cut -d, -f1,6,7,8 "$tmp/ev3/instances.csv" | tr '\n' ' ')"
else
	bad "LSIM_ABI3_PLUGIN not set"
fi

# A pipeline stage on a second node loads from remote storage (its node's
# cache is neither read nor filled). Two nodes of one H100, host cache on
# both; Llama-3.1-8B at pp 2, a stage per node, each GPU loading half the
# weights. At 0 both halves come from remote storage; at 100 (scaled in
# at 30 s idle) the first node's half comes from its host cache (8.03 GB
# / 25 GB/s) and the second node's from remote (8.03 GB / 10 GB/s +
# 1 ms + 4.5 us): the load ends with the remote half. 101 is warm.
printf 'arrival_s,prompt_tokens,output_tokens\n0,512,2\n100,512,2\n101,512,2\n' > "$tmp/pp.csv"
cat > "$tmp/pp.yaml" <<EOF2
name: sl-pp
cluster:
  - {name: n, gpu: H100-SXM, count: 2, gpus_per_node: 1, host_cache: 100GB}
network: {storage_bw: 10GB/s, storage_latency: 1ms, pcie_bw: 25GB/s, host_bw: 63GB/s}
instances:
  - {name: m8b, model: Llama-3.1-8B, gpu: H100-SXM, pp: 2, replicas: 0, serverless: true, keep_alive: 30s}
workload: {kind: auto, path: $tmp/pp.csv}
EOF2
"$exe" run "$tmp/pp.yaml" -o "$tmp/pp" --csv --quiet >/dev/null 2>"$tmp/err" || bad "pp run: $(cat "$tmp/err")"
r=$tmp/pp/requests.csv s=$tmp/pp/summary.csv
half=$(awk -v w="$W" 'BEGIN { printf "%.9f", w / 2 / 10e9 + 0.001 + 0.000001 + 0.000002 + 0.0000005 + 0.000001 }')
want2=$(awk -v l="$half" -v p="$(ttft 3)" 'BEGIN { printf "%.9f", l + p }')
near "$(ttft 2)" "$want2" 0.000000003 && [ "$(col "$tmp/pp/instances.csv" 2 pp)" = "2" ] \
	&& [ "$(get loads_host "$s")/$(get loads_remote "$s")" = "1/1" ] \
	&& ok "pipeline stage on a second node loads from remote storage: TTFT $(ttft 2) = $half + warm $(ttft 3)" \
	|| bad "pp over nodes: TTFT $(ttft 2), want $want2; $(cut -d, -f1,4,5,6,7 "$tmp/pp/instances.csv" | tr '\n' ' ')"

# the serverless keys at their defaults stay out of the effective
# configuration (and so of the run id) of a scenario without serverless
# groups or weight tiers: its run id is the one it had before they
# existed; a serverless scenario echoes every one of them
src=${LSIM_SOURCE_ROOT:-.}
skeys='host_cache|ssd_bw|ssd_capacity|ssd_latency|ssd_preload|serverless|keep_alive'
"$exe" check "$src/examples/autoscaling.yaml" > "$tmp/qs.txt" 2>"$tmp/err" || bad "check autoscaling: $(cat "$tmp/err")"
"$exe" check "$tmp/one.yaml" > "$tmp/one.txt" 2>"$tmp/err" || bad "check one: $(cat "$tmp/err")"
n_qs=$(grep -cE "^ +($skeys):" "$tmp/qs.txt") n_one=$(grep -cE "^ +($skeys):" "$tmp/one.txt")
grep -q "^    ssd_latency: 100us" "$tmp/one.txt" && grep -q "^    keep_alive: 30s" "$tmp/one.txt" \
	&& [ "$n_qs" = 0 ] && [ "$n_one" = 7 ] \
	&& ok "serverless keys echoed only by serverless scenarios (autoscaling 0, sl-one all 7 with defaults)" \
	|| bad "echo: autoscaling names $n_qs serverless keys, sl-one $n_one (want 0 and 7)"

# examples/serverless.yaml: 24 models on 8 GPUs; every request ends, most
# are warm (under 20 % wait for a load, the median TTFT is a prefill, not
# a load), and the summary reports loads (all from the node's tiers: the SSD holds
# every checkpoint), cold-start percentiles and GPU-seconds
"$exe" run "$src/examples/serverless.yaml" -o "$tmp/ex" --csv --quiet >/dev/null 2>"$tmp/err" || bad "example: $(cat "$tmp/err")"
s=$tmp/ex/summary.csv
[ "$(get completed "$s")" = "$(get requests "$s")" ] && [ "$(get loads_remote "$s")" = "0" ] \
	&& awk -v l="$(get model_loads "$s")" -v h="$(get loads_host "$s")" -v d="$(get loads_ssd "$s")" \
		-v p="$(get cold_start_p99_s "$s")" -v g="$(get gpu_seconds "$s")" \
		-v q="$(get requests_delayed_by_load "$s")" -v n="$(get requests "$s")" -v t="$(get ttft_p50_s "$s")" \
		'BEGIN { exit !(l == h + d && l > 24 && p > 0 && g > 0 && g <= 8 * 2000 && q < 0.2 * n && t < 1) }' \
	&& ok "example: $(get model_loads "$s") loads, cold-start p99 $(get cold_start_p99_s "$s") s, $(get gpu_seconds "$s") GPU-s" \
	|| bad "example: $(grep -E '^(requests|completed|model_loads|loads_|cold_start_p99|gpu_seconds)' "$s" | tr '\n' ' ')"

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
