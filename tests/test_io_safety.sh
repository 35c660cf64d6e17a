#!/usr/bin/env bash
# test_io_safety.sh - reading and writing files safely (docs/reliability.md,
# "Files"): a read that fails (memory running out under `ulimit -v`) is an
# error naming the file and line, never the end of the file; FIFOs and
# devices are refused as inputs and as outputs; a failed run leaves the
# previous run's files as they were; -o never replaces a symbolic link, a
# device or a folder; two sweeps on one folder; sampling and plan bounds.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }
asan=false
ldd "$exe" 2>/dev/null | grep -q 'libasan' && asan=true
base=$src/tests/bad_inputs/base.yaml
tracey=$src/tests/bad_inputs/trace.yaml

# expect NAME WANT_RC FRAGMENT... -- CMD...: runs CMD (stdin closed, 60 s
# at most), checks its exit code and that stderr holds every fragment.
expect() {
	local name=$1 want=$2; shift 2
	local frags=()
	while [ "$1" != -- ]; do frags+=("$1"); shift; done
	shift
	timeout 60 "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	if [ "$rc" != "$want" ]; then
		bad "$name: exit $rc, want $want: $(head -c 400 "$tmp/err")"
		return
	fi
	for f in "${frags[@]}"; do
		if ! grep -qF -- "$f" "$tmp/err"; then
			bad "$name: stderr lacks '$f': $(head -c 400 "$tmp/err")"
			return
		fi
	done
	ok "$name"
}

# --- a read that fails is not the end of the file --------------------------
# A trace whose third request's line is 200 MB: under a 200 MB address-space
# limit getline cannot hold it. Before, the readers took that for the end of
# the file and replayed 2 of 5 requests with exit 0.
if $asan; then
	ok "getline out of memory # SKIP AddressSanitizer cannot run under ulimit -v"
else
	{ echo "arrived_at,num_prefill_tokens,num_decode_tokens"
	  echo "0.0,512,128"; echo "0.25,1024,64"
	  printf '0.5,'; head -c 200000000 /dev/zero | tr '\0' '1'; echo ",5"
	  echo "0.75,100,10"; echo "1.0,100,10"; } >big.csv
	{ echo '{"arrival_time": 0.0, "input_toks": 10, "output_toks": 5}'
	  echo '{"arrival_time": 0.5, "input_toks": 10, "output_toks": 5}'
	  printf '{"arrival_time": 1.0, "input_toks": 10, "output_toks": 5, "pad": "'
	  head -c 200000000 /dev/zero | tr '\0' 'x'; echo '"}'
	  echo '{"arrival_time": 1.5, "input_toks": 10, "output_toks": 5}'
	  echo '{"arrival_time": 2.0, "input_toks": 10, "output_toks": 5}'; } >big.jsonl
	for t in csv jsonl; do
		line=4; [ $t = jsonl ] && line=3
		expect "run: $t line out of memory" 2 "big.$t:$line:" "out of memory reading line $line" -- \
			bash -c "ulimit -v 200000; exec \"\$@\"" - "$exe" run "$tracey" -o "out_$t" --quiet \
			--set workload.path="$tmp/big.$t"
		[ -e "out_$t/report.h5" ] && bad "run: $t line out of memory: a report was written"
		expect "trace stats: $t line out of memory" 2 "big.$t:$line:" "out of memory reading line $line" -- \
			bash -c "ulimit -v 200000; exec \"\$@\"" - "$exe" trace stats "big.$t"
		expect "trace convert: $t line out of memory" 2 "big.$t:$line:" "out of memory reading line $line" -- \
			bash -c "ulimit -v 200000; exec \"\$@\"" - "$exe" trace convert "big.$t" -o "conv_$t.csv"
		[ -e "conv_$t.csv" ] || [ -e "conv_$t.csv.tmp" ] &&
			bad "trace convert: $t line out of memory: left conv_$t.csv"
	done
	rm -f big.csv big.jsonl
fi

# --- FIFOs and devices as inputs ---------------------------------------------
mkfifo fifo
expect "trace is a FIFO" 2 "fifo: workload.path: is a FIFO" -- \
	"$exe" run "$tracey" -o out_fifo --set workload.path="$tmp/fifo"
expect "scenario is a FIFO" 2 "fifo: is a FIFO" -- "$exe" check fifo
expect "trace stats of a FIFO" 2 "fifo: workload.path: is a FIFO" -- "$exe" trace stats fifo
expect "trace is a device" 2 "/dev/zero: workload.path: is a device" -- \
	"$exe" trace stats /dev/zero

echo "# $fails failed"
[ "$fails" -eq 0 ]
