#!/usr/bin/env bash
# test_calibrate_cli.sh - the calibration command lines end to end.
#   test_calibrate_cli.sh fit LLMSIM_FIT: help, bad arguments and bad raw
#     files (exit 2, file:line:col: key), the recorded synthetic table fitted
#     into a profile that `llmsim check` then loads from a data folder.
#   test_calibrate_cli.sh calibrate LLMSIM_CALIBRATE: the same with the CUDA
#     binary (--fit needs no GPU), and, on a machine without nvidia-smi and
#     /dev/nvidia0, exit 3 with "no CUDA device present (...)".
set -u
mode=${1:?mode}
prog=${2:?program}
src=${LSIM_SOURCE_ROOT:?}
data=$src/tests/data/calib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }
name=$(basename "$prog")

# expect NAME CODE STREAM FRAGMENT... -- CMD...: exit code and fragments
expect() {
	local what=$1 code=$2 stream=$3; shift 3
	local frags=()
	while [ "$1" != "--" ]; do frags+=("$1"); shift; done
	shift
	local out err rc
	out=$("$@" 2>"$tmp/err"); rc=$?
	err=$(cat "$tmp/err")
	[ "$rc" -eq "$code" ] || { bad "$what: exit $rc, want $code ($out $err)"; return; }
	local text=$out
	[ "$stream" = stderr ] && text=$err
	for f in "${frags[@]}"; do
		case "$text" in *"$f"*) ;; *) bad "$what: '$f' not in: $text"; return;; esac
	done
	ok "$what"
}

[ -x "$prog" ] && ok "$name exists" || bad "$name exists"
expect "$name --help" 0 stdout "usage: $name" "--base NAME" "exit status" -- "$prog" --help
expect "$name bad option" 2 stderr "unexpected argument '--frobnicate'" -- "$prog" --frobnicate
expect "$name -o not yaml" 2 stderr "NAME.yaml" -- "$prog" --fit "$data/synthetic.csv" -o "$tmp/x.txt"
expect "$name missing column" 2 stderr "bad_missing_column.csv:1:" "median_s" -- \
	"$prog" --fit "$data/bad_missing_column.csv"
expect "$name non-numeric" 2 stderr "bad_nonnumeric.csv:4:21: size: not a number: '64KiB'" -- \
	"$prog" --fit "$data/bad_nonnumeric.csv"
expect "$name bad base" 2 stderr "No-Such-GPU" -- \
	"$prog" --fit "$data/synthetic.csv" -o "$tmp/Y.yaml" --base No-Such-GPU

mkdir -p "$tmp/data/profiles"
cp "$src"/calibrate/profiles/*.yaml "$tmp/data/profiles/"
cp "$src/calibrate/models.yaml" "$tmp/data/"
expect "$name fit" 0 stdout "transfer h2d_pinned    latency   10.033 us  bandwidth   25.052 GB/s" \
	"pcie interference      slowdown = 1 + 0.2948 u / (1 - u)^1.507" \
	"gemm bf16              790.8 TFLOP/s x M / (M + 255.8)" \
	"profile Synth-GPU written" -- \
	"$prog" --fit "$data/synthetic.csv" -o "$tmp/data/profiles/Synth-GPU.yaml" --base H100-SXM
p=$tmp/data/profiles/Synth-GPU.yaml
for line in "name: Synth-GPU" "pcie_bw: 25.0517GB/s" "mfu_half_tokens: 255.753" \
	"pcie_interference: 0.294761" "tdp: 700W" "#   date: 2026-01-01T00:00:00Z"; do
	grep -qF "$line" "$p" && ok "profile has '$line'" || bad "profile has '$line'"
done
expect "$name no base" 0 stderr "placeholders for nvlink_bw, tdp, idle_power, price" -- \
	"$prog" --fit "$data/synthetic.csv" -o "$tmp/data/profiles/Bare.yaml"

# the simulator loads both profiles from a data folder
if [ -n "${LSIM_EXE:-}" ] && [ -x "$LSIM_EXE" ]; then
	for g in Synth-GPU Bare; do
		printf 'name: cal\ninstances: [{gpu: %s}]\nworkload: {rate: 5, count: 10}\n' "$g" >"$tmp/s_$g.yaml"
		LLMSIM_DATA_DIR=$tmp/data "$LSIM_EXE" check "$tmp/s_$g.yaml" >"$tmp/check_$g" 2>&1 \
			&& ok "llmsim check loads $g" || bad "llmsim check loads $g: $(cat "$tmp/check_$g")"
	done
fi

if [ "$mode" = calibrate ]; then
	if command -v nvidia-smi >/dev/null 2>&1 || [ -e /dev/nvidia0 ]; then
		echo "ok - no-device check skipped (an NVIDIA GPU may be present) # SKIP"
	else
		expect "$name without a GPU" 3 stderr "llmsim-calibrate: no CUDA device present (" -- \
			"$prog" --quick --raw "$tmp/raw.csv"
		[ ! -e "$tmp/raw.csv" ] && ok "no raw file without a GPU" || bad "no raw file without a GPU"
	fi
fi

[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
