#!/usr/bin/env bash
# test_soak.sh - the long soak (suite slow, -Dslow_tests=true): more than
# 10^8 events of tests/data/scenarios/soak.yaml (autoscaling, replica, node
# and coordinator failures, spot reclaims) must end cleanly, which under the
# AddressSanitizer build with -Dinvariants=true means no memory error, no
# leak and no broken invariant after any event; and every request must end
# exactly once.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$exe" run "$src/tests/data/scenarios/soak.yaml" -o "$tmp/out" --csv --quiet
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL - soak run: exit $rc"; exit 1; }
get() { grep "^$1," "$tmp/out/summary.csv" | cut -d, -f2; }
events=$(get sim_events) requests=$(get requests) completed=$(get completed)
rejected=$(get rejected) failed=$(get failed) unfinished=$(get unfinished)
echo "soak: $events events, $requests requests ($completed completed," \
	"$rejected rejected, $failed failed, $unfinished unfinished)," \
	"$(get failures) failures, $(get node_failures) node failures," \
	"$(get spot_reclaims) reclaims, $(get requeued) requeued"
fails=0
[ "$events" -ge 100000000 ] && echo "ok - over 10^8 events" ||
	{ echo "FAIL - only $events events"; fails=1; }
[ $((completed + rejected + failed + unfinished)) -eq "$requests" ] &&
	[ "$unfinished" -eq 0 ] && echo "ok - every request ended once" ||
	{ echo "FAIL - requests do not add up"; fails=1; }
for k in failures node_failures spot_reclaims requeued; do
	[ "$(get $k)" -gt 0 ] && echo "ok - $k happened" ||
		{ echo "FAIL - no $k"; fails=1; }
done
# every request is in the records once
rows=$(($(wc -l < "$tmp/out/requests.csv") - 1))
ids=$(tail -n +2 "$tmp/out/requests.csv" | cut -d, -f1 | sort -u | wc -l)
[ "$rows" -eq "$requests" ] && [ "$ids" -eq "$requests" ] &&
	echo "ok - $rows request records, ids unique" ||
	{ echo "FAIL - $rows records, $ids ids, $requests requests"; fails=1; }
exit "$fails"
