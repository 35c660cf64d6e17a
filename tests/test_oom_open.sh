#!/usr/bin/env bash
# test_oom_open.sh - memory running out while a file is opened (fopen or
# fdopen failing with ENOMEM, tests/oom/failopen.c) as the table perf
# backend loads its tables: llmsim check must exit 2 with "out of memory"
# and the file's name, not "cannot open" (it said "moe.csv: cannot open:
# Cannot allocate memory" with an I/O error's code). Skipped (77) in
# sanitizer builds, where an LD_PRELOAD library cannot come first.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
hook=${LSIM_FAILOPEN:-}
if [ -z "$hook" ] || [ "${LSIM_SANITIZE:-none}" != none ] ||
	ldd "$exe" 2>/dev/null | grep -q 'lib[at]san\|libubsan'; then
	echo "SKIP: sanitizer build (an LD_PRELOAD library cannot come first)"
	exit 77
fi
scenario=$src/tests/data/scenarios/dp2_ep_moe.yaml
fails=0
# the MoE scenario reads tp1/dense.csv, tp1/moe.csv, ... and meta.yaml
"$exe" check "$scenario" >/dev/null 2>&1 || { echo "FAIL - check without the hook"; exit 1; }
for file in tp1/dense.csv tp1/attention.csv tp1/moe.csv meta.yaml; do
	# the run id reads each file first (checked below): fail the second open
	err=$(LD_PRELOAD=$hook LSIM_FAIL_OPEN_MATCH=$file LSIM_FAIL_OPEN_AFTER=1 "$exe" check "$scenario" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" -ne 2 ]; then
		echo "FAIL - $file: exit $rc, want 2: $err"; fails=$((fails + 1))
	elif [[ "$err" != *"$file"*"out of memory"* ]] || [[ "$err" == *"cannot open"* ]] ||
		[[ "$err" == *"run id"* ]]; then
		echo "FAIL - $file: want '$file ... out of memory', got: $err"; fails=$((fails + 1))
	else
		echo "ok - $file: $err"
	fi
done
# tp2/dense.csv is not loaded at tp 1 but counts in the run id (its
# folder's files, by their bytes): memory running out there must fail the
# check too, not give another run id with exit 0
err=$(LD_PRELOAD=$hook LSIM_FAIL_OPEN_MATCH=tp2/dense.csv "$exe" check "$scenario" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 2 ] && [[ "$err" == *"tp2/dense.csv"*"out of memory reading it for the run id"* ]]; then
	echo "ok - tp2/dense.csv (run id): $err"
else
	echo "FAIL - tp2/dense.csv (run id): exit $rc: $err"; fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
