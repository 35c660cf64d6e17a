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
# a measured run's requests.jsonl that is a FIFO: refused, not waited on
mkdir -p fiforun && cp "$src/examples/data/vllm_runs/RTX4090/Llama-3.1-8B/meta.json" fiforun/ &&
	mkfifo fiforun/requests.jsonl
expect "validate: requests.jsonl is a FIFO" 2 "fiforun/requests.jsonl: is a FIFO" -- \
	"$exe" validate fiforun \
	--profile "$src/calibrate/perf/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16"

# --- a failed run leaves the previous run's files as they were ---------------
# same_files DIR SUMS: DIR's files are those listed in SUMS (md5sum), no more.
same_files() {
	(cd "$1" && md5sum -- * 2>/dev/null) | diff -q - "$2" >/dev/null
}
"$exe" run "$base" -o prev --csv --quiet >/dev/null 2>&1 || bad "first run failed"
(cd prev && md5sum -- *) >prev.sums
# the disk full at the CSV files (timeseries.csv.tmp is a link to /dev/full)
ln -s /dev/full prev/timeseries.csv.tmp
expect "disk full at the CSV files" 2 "timeseries.csv" "No space left on device" -- \
	"$exe" run "$base" -o prev --csv --quiet --seed 2 --force
same_files prev prev.sums && ok "disk full at the CSV files: the previous run's files kept" ||
	bad "disk full at the CSV files: the folder changed: $(ls prev)"
# the disk full at the database: the new database (about 20 KB) is written
# first, beside the old one, and files may not grow past 10 KiB. Before,
# this deleted the previous report.h5.
if command -v sqlite3 >/dev/null; then
	rm -rf prevdb && cp -R prev prevdb
	(cd prevdb && md5sum -- *) >prevdb.sums
	expect "disk full at the database" 2 "results.sqlite.tmp: cannot" -- \
		bash -c "trap '' XFSZ; ulimit -f 10; exec \"\$@\"" - "$exe" run "$base" -o prevdb --csv --quiet --seed 2 --force
	same_files prevdb prevdb.sums && ok "disk full at the database: the previous run's files kept" ||
		bad "disk full at the database: the folder changed: $(ls prevdb)"
else
	ok "disk full at the database # SKIP no sqlite3 command"
fi
# a folder that holds a run is refused without --force, and left alone
(cd prev && md5sum -- *) >prev2.sums
expect "run into a folder holding a run" 2 "prev: -o: already holds a run (report.h5); write --force" -- \
	"$exe" run "$base" -o prev --quiet --seed 3
same_files prev prev2.sums && ok "refused without --force: the folder unchanged" ||
	bad "refused without --force: the folder changed: $(ls prev)"
# and a run that succeeds replaces them all
"$exe" run "$base" -o prev --csv --quiet --seed 2 --force >/dev/null 2>&1 || bad "second run failed"
if [ "$(cd prev && md5sum -- requests.csv)" = "$(grep ' requests.csv$' prev.sums)" ] ||
	ls prev | grep -q '\.tmp$'; then
	bad "a run that succeeds did not replace the files: $(ls prev)"
else
	ok "a run that succeeds replaces the files"
fi
# --force replaces the whole run: the database holds the new run's row only
# (seed 2 and seed 4 have different run ids), and a run without --csv takes
# the replaced run's CSV files away
"$exe" run "$base" -o prev --quiet --seed 4 --force >/dev/null 2>&1 || bad "forced run failed"
if command -v sqlite3 >/dev/null; then
	[ "$(sqlite3 prev/results.sqlite "SELECT count(*), min(seed) FROM runs;")" = "1|4" ] &&
		ok "--force: the database holds the new run only" ||
		bad "--force: runs rows: $(sqlite3 prev/results.sqlite "SELECT run_id, seed FROM runs;")"
fi
[ "$(ls prev)" = "$(printf 'report.h5\nresults.sqlite')" ] && ok "--force without --csv: the old CSV files are gone" ||
	bad "--force without --csv left: $(ls prev | tr '\n' ' ')"

# --- -o replaces regular files only -----------------------------------------
mkdir -p links && ln -s "$tmp/elsewhere.h5" links/report.h5
expect "run: report.h5 a symbolic link" 2 "links/report.h5: -o: is a symbolic link" -- \
	"$exe" run "$base" -o links --quiet
[ -e elsewhere.h5 ] && bad "run: report.h5 a symbolic link: written through it"
mkdir -p dblink && ln -s /dev/full dblink/results.sqlite
expect "run: results.sqlite a symbolic link" 2 "dblink/results.sqlite: -o: is a symbolic link" -- \
	"$exe" run "$base" -o dblink --quiet
mkdir -p csvlink && ln -s "$tmp/elsewhere.csv" csvlink/summary.csv
expect "run --csv: summary.csv a symbolic link" 2 "csvlink/summary.csv: -o: is a symbolic link" -- \
	"$exe" run "$base" -o csvlink --csv --quiet
mkdir -p h5dir/report.h5
expect "run: report.h5 a folder" 2 "h5dir/report.h5: -o: is a folder" -- \
	"$exe" run "$base" -o h5dir --quiet
vidur=$src/tests/data/formats/vidur.csv
# a device of our own (as /dev/full is: a build that wrote over it would
# replace the machine's); mknod needs root
if mknod fulldev c 1 7 2>/dev/null; then
	expect "trace convert -o a device" 2 "fulldev: -o: is a device" -- \
		"$exe" trace convert "$vidur" -o fulldev
	[ -c fulldev ] || bad "trace convert -o a device: replaced it"
else
	ok "trace convert -o a device # SKIP mknod needs root"
fi
ln -s "$tmp/target.csv" convlink.csv
expect "trace convert -o a symbolic link" 2 "convlink.csv: -o: is a symbolic link" -- \
	"$exe" trace convert "$vidur" -o convlink.csv
[ -e target.csv ] && bad "trace convert -o a symbolic link: written through it"
expect "trace convert -o a FIFO" 2 "fifo: -o: is a FIFO" -- \
	"$exe" trace convert "$vidur" -o fifo

# --- one sweep per folder ----------------------------------------------------
# Two sweeps on one folder deleted each other's runs in flight (each takes
# the other's runs/ID.PID.tmp for a killed sweep's). The folder's
# sweep.lock, held here as a running sweep holds it, refuses the second.
good=$src/tests/bad_inputs/sweep/good.yaml
if command -v flock >/dev/null; then
	mkdir -p swp
	(
		flock -n 9 || exit 1
		echo 4242 >&9
		expect "a second sweep on the folder" 2 "swp/sweep.lock: -o: folder swp is in use by sweep pid 4242" -- \
			"$exe" sweep "$good" -o swp --quiet
		echo "$fails" >fails.sub
	) 9>swp/sweep.lock
	fails=$(cat fails.sub)
	[ -z "$(ls swp/runs 2>/dev/null)" ] || bad "a second sweep on the folder: it ran: $(ls swp/runs)"
	expect "the sweep once the folder is free" 0 -- "$exe" sweep "$good" -o swp --quiet
	[ "$(ls swp/runs | wc -l)" = 2 ] || bad "the sweep once the folder is free: runs $(ls swp/runs)"
else
	ok "a second sweep on the folder # SKIP no flock command"
fi

# --- memory running out around the report's creation ------------------------
# HDF5 1.10's H5Fcreate crashed (SIGSEGV) when its metadata cache could not
# be allocated, leaving report.h5.tmp (ulimit -v 52500 on the quickstart in
# the release build). Every limit of a range that spans the report's
# creation must give exit 0 or 2, and no .tmp file.
if $asan; then
	ok "memory running out at the report # SKIP AddressSanitizer cannot run under ulimit -v"
else
	crashed=
	for v in $(seq 50000 250 60000); do
		rm -rf h5lim
		(ulimit -v "$v"; exec "$exe" run "$src/examples/quickstart.yaml" -o h5lim --quiet) \
			</dev/null >/dev/null 2>h5lim.err
		rc=$?
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
			crashed="$crashed $v:exit$rc"
		elif ls h5lim 2>/dev/null | grep -q '\.tmp$'; then
			crashed="$crashed $v:left-tmp"
		fi
	done
	[ -z "$crashed" ] && ok "memory running out at the report: exit 0 or 2, nothing left" ||
		bad "memory running out at the report:$crashed"
fi

# --- sampling bounds ---------------------------------------------------------
# 1ns: 10^9 samples a simulated second.
# (5 x 10^7 samples: 10 s in the release build, minutes under the sanitizers)
if $asan; then
	ok "5e7 samples # SKIP too slow under the sanitizers"
else
	expect "output.sample_period 1ns" 2 "output.sample_period: 1e-09s gives more than 50000000 samples" -- \
		"$exe" run "$base" -o ns --quiet --set output.sample_period=1ns
fi
expect "output.sample_period 1us over duration 1000s" 2 "--set: output.sample_period" "raise it to at least 2e-05s" -- \
	"$exe" check "$base" --set output.sample_period=1us --set duration=1000s

# --- a sweep too large to plan ------------------------------------------------
# Each run is loaded and checked before the first starts; 10^5 values of
# one axis ran silently for minutes. Past 100,000 runs the sweep file is
# refused at once, naming axes.
{ echo "scenario: $base"; echo "axes:"; printf '  workload.count: ['
  seq -s, 1 100001 | tr -d '\n'; echo ']'; } >long.yaml
expect "a sweep of 100001 runs" 2 "long.yaml" "axes" "100001 runs, more than the 100000 a sweep may plan" -- \
	"$exe" sweep long.yaml -o longsw --quiet
[ -e longsw/runs ] && bad "a sweep of 100001 runs: it started"

echo "# $fails failed"
[ "$fails" -eq 0 ]
