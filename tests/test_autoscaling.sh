#!/bin/sh
# test_autoscaling.sh - examples/autoscaling.yaml under static peak
# provisioning and under each adaptor: prints cost and SLO attainment, and
# checks that every adaptor costs at least 30% less than static peak while
# keeping SLO attainment at 95% or more, and that scaling in loses no
# request.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/examples/autoscaling.yaml"
fails=0
run() { # name, adaptor line, then --set arguments
	name=$1
	sed "s|^adaptor: .*|adaptor: $2|" "$scen" > "$tmp/$name.yaml"
	shift 2
	"$exe" run "$tmp/$name.yaml" -o "$tmp/$name" --csv --quiet "$@" >/dev/null 2>"$tmp/$name.err" ||
		{ echo "FAIL - $name: $(cat "$tmp/$name.err")"; fails=$((fails + 1)); return; }
}
val() { grep "^$2," "$tmp/$1/summary.csv" | cut -d, -f2; }
run static static --set instances.0.replicas=4 --set instances.0.min_replicas=4
run threshold '{name: threshold, metric: rate, high: 0.95, low: 0.6, window: 20s, cooldown_in: 60s, cooldown_out: 30s}'
run target_tracking '{name: target_tracking, metric: rate, target: 1.0, stabilization: 60s}'
run predictive '{name: predictive, season: 2h, headroom: 0.9, stabilization: 60s}'
run schedule '{name: schedule, table: "0h:3,0.25h:4,0.75h:3,1h:2,1.25h:1,1.75h:2", period: 2h}'
base=$(val static cost_usd)
printf '%-16s %10s %8s %8s %10s\n' policy cost_usd saving slo started
for p in static threshold target_tracking predictive schedule; do
	[ -f "$tmp/$p/summary.csv" ] || continue
	c=$(val "$p" cost_usd)
	slo=$(val "$p" slo_attainment)
	n=$(($(wc -l < "$tmp/$p/instances.csv") - 1))
	line=$(awk -v c="$c" -v b="$base" -v s="$slo" -v p="$p" -v n="$n" \
		'BEGIN { printf "%-16s %10.2f %7.1f%% %8.4f %10d", p, c, 100 * (1 - c / b), s, n }')
	echo "$line"
	# scale-in drains: no request is lost - every one that arrived ended
	# exactly once, and all of them completed (the run has no time limit)
	arr=$(val "$p" requests); done_=$(val "$p" completed)
	rows=$(($(wc -l < "$tmp/$p/requests.csv") - 1))
	if [ "$arr" != "$done_" ] || [ "$rows" != "$arr" ] || [ "$(val "$p" unfinished)" != 0 ]; then
		echo "FAIL - $p: $arr arrived, $done_ completed, $rows request rows"
		fails=$((fails + 1))
	fi
	if [ "$p" != static ] && ! awk -v c="$c" -v b="$base" -v s="$slo" \
		'BEGIN { exit !(c <= 0.7 * b && s >= 0.95) }'; then
		echo "FAIL - $p: cost $c vs static $base, SLO $slo"
		fails=$((fails + 1))
	fi
done
awk -v s="$(val static slo_attainment)" 'BEGIN { exit !(s >= 0.95) }' ||
	{ echo "FAIL - static peak misses the SLO"; fails=$((fails + 1)); }
echo "autoscaling: $fails failure(s)"
[ "$fails" -eq 0 ]
