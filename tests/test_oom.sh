#!/usr/bin/env bash
# test_oom.sh - out-of-memory paths: `llmsim run small.yaml --csv` with the
# Nth allocation of llmsim's own code failing (tests/oom/failalloc.c, an
# LD_PRELOAD interposer), for a deterministic sample of N over the whole
# range 1..T - the first two allocations at every call site plus a
# stride - or every N with LSIM_OOM_ALL=1. Each run must either fail
# cleanly - exit 2 (sim/cli/cli.h: the machine cannot hold the run), "out of memory" on
# stderr, no report.h5, results.sqlite or CSV left behind, every block
# llmsim allocated freed - or recover and write exactly the outputs of a
# normal run; never a signal or a hang. valgrind checks 20 of the N for
# definite leaks, including library objects llmsim fails to release
# (LSIM_OOM_VALGRIND=0: not). LSIM_OOM_SET: a scenario key=value for
# every run (the oom-macro test: macro_steps=true). Skipped (77) in
# sanitizer builds: ASan replaces malloc, so the interposer cannot work
# there.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
hook=${LSIM_FAILALLOC:-}
scenario=$src/tests/data/scenarios/small.yaml
set_args=()
[ -n "${LSIM_OOM_SET:-}" ] && set_args=(--set "$LSIM_OOM_SET")

if [ -z "$hook" ] || [ "${LSIM_SANITIZE:-none}" != none ] ||
	ldd "$exe" 2>/dev/null | grep -q 'lib[at]san\|libubsan'; then
	echo "SKIP: sanitizer build (ASan owns malloc; the interposer cannot work)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }

# run_at N DIR [WRAPPER...]: llmsim with the Nth allocation failing (N 0:
# none), output in DIR, stderr in DIR.err; sets rc.
run_at() {
	local n=$1 dir=$2; shift 2
	rm -rf "$dir" "$dir.err"
	LD_PRELOAD=$hook LSIM_FAIL_ALLOC_AT=$n LSIM_FAIL_ALLOC_COUNT=1 \
		LSIM_FAIL_ALLOC_TRACE=1 timeout 120 "$@" "$exe" run "$scenario" \
		"${set_args[@]}" -o "$dir" --csv --quiet >/dev/null 2>"$dir.err"
	rc=$?
}

# The allocations of a normal run, twice: the count must not vary. The
# first logs each one's call site (its return address in llmsim).
LSIM_FAIL_ALLOC_LOG=$tmp/sites run_at 0 "$tmp/base"
[ "$rc" -eq 0 ] || { bad "normal run under the hook: exit $rc: $(cat "$tmp/base.err")"; exit 1; }
T=$(sed -n 's/^failalloc: count=\([0-9]*\) .*/\1/p' "$tmp/base.err")
live=$(sed -n 's/^failalloc: .* live=\([0-9]*\) .*/\1/p' "$tmp/base.err")
run_at 0 "$tmp/base2"
T2=$(sed -n 's/^failalloc: count=\([0-9]*\) .*/\1/p' "$tmp/base2.err")
if [ -z "$T" ] || [ "$T" -lt 100 ] || [ "$T" != "$T2" ] || [ "$live" != 0 ] ||
	[ "$(wc -l <"$tmp/sites")" != "$T" ]; then
	bad "allocation count: '$T' then '$T2' (live '$live'): the hook is not counting"
	exit 1
fi
# The sample: the first two allocations made at each call site, and every
# Kth N for ~250 more, K = T / 250; all of 1..T with LSIM_OOM_ALL=1.
awk '!seen[$2]++ { print $1 }' "$tmp/sites" >"$tmp/first"
nsites=$(wc -l <"$tmp/first")
echo "# T = $T allocations by llmsim's code in a normal run, at $nsites call sites"
if [ "${LSIM_OOM_ALL:-0}" = 1 ]; then
	ns=$(seq 1 "$T")
else
	ns=$({ awk 'seen[$2]++ < 2 { print $1 }' "$tmp/sites"
	       seq 1 $((T / 250 + 1)) "$T"; } | sort -n -u)
fi

base=$tmp/base # what a run that recovers must have written

# check_run N DIR: the checks of a run whose Nth allocation failed.
check_run() {
	local n=$1 dir=$2 err
	err=$(grep -v '^failalloc: ' "$dir.err" | head -c 600)
	if [ "$rc" -ge 124 ]; then
		bad "N=$n: crashed or hung (exit $rc): $err"
		return
	fi
	grep -q "^failalloc: failing allocation $n " "$dir.err" ||
		{ bad "N=$n: the allocation was never made (exit $rc)"; return; }
	grep -q "^failalloc: .* live=0 " "$dir.err" ||
		{ bad "N=$n: blocks left allocated: $(grep '^failalloc: count' "$dir.err")"; return; }
	if [ "$rc" -eq 0 ]; then # recovered: the outputs of a normal run
		for f in "$base"/*.csv "$base/report.h5"; do
			cmp -s "$f" "$dir/${f##*/}" ||
				{ bad "N=$n: exit 0 but ${f##*/} differs from a normal run's"; return; }
		done
		recovered=$((recovered + 1))
		return
	fi
	[ "$rc" -eq 2 ] || { bad "N=$n: exit $rc, want 2: $err"; return; }
	case "$err" in
	*"out of memory"*) ;;
	*) bad "N=$n: no 'out of memory' on stderr: $err"; return;;
	esac
	local left
	left=$(ls "$dir" 2>/dev/null | grep -E '\.(h5|sqlite|csv|tmp)$' | tr '\n' ' ')
	[ -z "$left" ] || { bad "N=$n: failed but left $left"; return; }
	failed=$((failed + 1))
}

recovered=0 failed=0 tested=0
start=$SECONDS
for n in $ns; do
	run_at "$n" "$tmp/run"
	check_run "$n" "$tmp/run"
	tested=$((tested + 1))
done
echo "# $tested N in 1..$T: $failed failed cleanly, $recovered recovered," \
	"$fails bad, $((SECONDS - start)) s"

# valgrind: definite leaks for 20 N, the first allocation at every
# ~nsites/20th call site (the hook counts llmsim's own blocks; this also
# sees what libraries allocated for llmsim and were never told to free).
if command -v valgrind >/dev/null && [ "${LSIM_OOM_VALGRIND:-1}" = 1 ]; then
	vg=(valgrind -q --soname-synonyms=somalloc=nouserintercepts --leak-check=full
	    --errors-for-leak-kinds=definite --error-exitcode=99)
	start=$SECONDS vn=0
	# a run that recovers is compared with a normal run under valgrind:
	# its long double arithmetic has a double's precision, so the means
	# of summary.csv differ from the native run's in the last digits
	run_at 0 "$tmp/vgbase" "${vg[@]}"
	[ "$rc" -eq 0 ] || bad "normal run under valgrind: exit $rc: $(head -c 300 "$tmp/vgbase.err")"
	base=$tmp/vgbase
	vns=$(awk -v n="$nsites" 'BEGIN { for (i = 0; i < 20; i++) pick[int(i * (n - 1) / 19) + 1] = 1 }
				  pick[NR] { print }' "$tmp/first")
	for n in $vns; do
		run_at "$n" "$tmp/vg" "${vg[@]}"
		if [ "$rc" -eq 99 ]; then
			bad "N=$n: valgrind finds leaks: $(grep -m1 -A6 'definitely lost' "$tmp/vg.err")"
		else
			check_run "$n" "$tmp/vg"
		fi
		vn=$((vn + 1))
	done
	echo "# valgrind: $vn N, $((SECONDS - start)) s"
else
	echo "# valgrind not run: leaks checked by the hook's live count only"
fi

[ "$fails" -eq 0 ] && echo "ok - out of memory: $tested N" && exit 0
echo "$fails failures"
exit 1
