#!/bin/sh
# test_cpu_offload.sh - weight offload (instances[].cpu_offload_gb, vLLM's
# cpu_offload_gb; docs/memory.md) against hand computations:
# - one request alone on one H100 (PCIe 25 GB/s, host link 63 GB/s): every
#   step first copies 4 GiB host to GPU, 1.5 us of path latency + 4 GiB /
#   25 GB/s = 1,500 + ceil(4294967296 / 25) ns = 171,800,192 ns, then runs
#   the same kernels as without offload, so its first token comes exactly
#   that much later and its last one 4 x that (1 prefill + 3 decode steps);
# - the memory plan holds 4 GiB less weight: KV blocks of 16 tokens x
#   131,072 B = 2 MiB rise by 4 GiB / 2 MiB = 2,048 exactly;
# - the copies are flows on the GPU's PCIe link: its bytes are 4 x 4 GiB;
# - refusals (exit 2, key named): more than the weights one GPU holds, no
#   cluster, pp 2;
# - left at 0 the key stays out of the effective configuration.
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
# nanoseconds of a time in seconds printed with 9 decimals
ns() { awk -v t="$1" 'BEGIN { printf "%.0f", t * 1e9 }'; }

printf 'arrival_s,prompt_tokens,output_tokens\n0,512,4\n' > "$tmp/t.csv"
scen() { # NAME EXTRA-INSTANCE-KEYS
	cat > "$tmp/$1.yaml" <<EOF2
name: $1
cluster:
  - {gpu: H100-SXM, count: 1, gpus_per_node: 1}
network: {pcie_bw: 25GB/s, host_bw: 63GB/s}
instances:
  - {model: Llama-3.1-8B, gpu: H100-SXM$2}
workload: {kind: auto, path: $tmp/t.csv}
EOF2
}
scen base ""
scen off ", cpu_offload_gb: 4"
for s in base off; do
	"$exe" run "$tmp/$s.yaml" -o "$tmp/$s" --csv --quiet >/dev/null 2>"$tmp/err" ||
		bad "run $s: $(cat "$tmp/err")"
done
step=171800192
for c in first_token finish; do
	b=$(ns "$(col "$tmp/base/requests.csv" 1 $c)")
	o=$(ns "$(col "$tmp/off/requests.csv" 1 $c)")
	k=1
	[ $c = finish ] && k=4
	want=$((b + k * step))
	[ "$o" = "$want" ] && ok "$c: $o ns = without offload $b + $k x $step" ||
		bad "$c: $o ns, expected $b + $k x $step = $want"
done
bb=$(col "$tmp/base/instances.csv" 1 kv_blocks)
ob=$(col "$tmp/off/instances.csv" 1 kv_blocks)
[ "$((ob - bb))" -eq 2048 ] && ok "KV blocks $bb -> $ob (+2048 = 4 GiB / 2 MiB)" ||
	bad "KV blocks $bb -> $ob, expected +2048"
# links.csv: the GPU's host-to-GPU PCIe link carries 4 steps x 4 GiB
pb=$(awk -F, 'NR > 1 && $2 == "pcie" && $5 > 0 { print $5 }' "$tmp/off/links.csv")
[ "$pb" = "17179869184" ] && ok "PCIe link bytes 17179869184 = 4 x 4 GiB" ||
	bad "PCIe link bytes '$pb', expected 17179869184"

refuse() { # NAME WHAT-IN-STDERR
	"$exe" check "$tmp/$1.yaml" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q -- "$2" "$tmp/err"; then
		ok "refused: $1 ($(head -c 160 "$tmp/err"))"
	else
		bad "$1: exit $rc, stderr: $(cat "$tmp/err")"
	fi
}
scen toomuch ", cpu_offload_gb: 15"
refuse toomuch "instances\[0\].cpu_offload_gb.*write at most 14.957"
scen pp2 ", cpu_offload_gb: 1, pp: 2"
sed -i 's/gpus_per_node: 1/gpus_per_node: 2/; s/count: 1/count: 2/' "$tmp/pp2.yaml"
refuse pp2 "instances\[0\].cpu_offload_gb.*pp > 1"
cat > "$tmp/nocluster.yaml" <<EOF2
name: nocluster
instances:
  - {model: Llama-3.1-8B, gpu: H100-SXM, cpu_offload_gb: 1}
workload: {count: 1}
EOF2
refuse nocluster "instances\[0\].cpu_offload_gb.*add a cluster"
"$exe" check "$tmp/base.yaml" 2>/dev/null | grep -q cpu_offload_gb &&
	bad "cpu_offload_gb at 0 is in the effective configuration" ||
	ok "cpu_offload_gb at 0 stays out of the effective configuration"
"$exe" check "$tmp/off.yaml" 2>/dev/null | grep -q "cpu_offload_gb: 4" &&
	ok "cpu_offload_gb: 4 is in the effective configuration" ||
	bad "cpu_offload_gb: 4 is missing from the effective configuration"
echo "1..9"
[ "$fails" -eq 0 ]
