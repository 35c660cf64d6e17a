#!/usr/bin/env bash
# test_hostile_values.sh - the fault class "a hostile value in a numeric
# field" (issue 29), over every CSV and JSONL input llmsim reads: request
# traces (CSV and JSONL), job files, failure traces, carbon-intensity
# tables and perf tables. Each numeric column of a good file is set in turn,
# on one row, to NaN, inf, -inf, 1e400, an empty field, null, a word and a
# negative number, and each must be refused with exit 2 naming the file and
# that row's line (and the column), without a crash or a sanitizer report.
# (meta.json and requests.jsonl of `validate`: tests/test_validate.c.)
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$src/tests/bad_inputs/." "$tmp/"
cd "$tmp" || exit 1
fails=0 n=0
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }

# check NAME FILE LINE KEY ARGS...: llmsim ARGS must exit 2 with
# "FILE:LINE:" and KEY in its message, and no crash
check() {
	local name=$1 file=$2 line=$3 key=$4
	shift 4
	n=$((n + 1))
	"$exe" "$@" >/dev/null 2>err; local rc=$?
	if [ $rc -ne 2 ]; then
		bad "$name: exit $rc: $(head -c 300 err)"
	elif ! grep -qF "$file:$line:" err || ! grep -qF "$key" err; then
		bad "$name: no $file:$line: or $key in: $(head -c 300 err)"
	elif grep -q "Sanitizer\|runtime error" err; then
		bad "$name: sanitizer: $(head -c 300 err)"
	fi
}

values=(nan inf -inf 1e400 '' null x -3)
json_values=(NaN Infinity -Infinity 1e400 null '"x"' '[1]' -3)

for i in "${!values[@]}"; do
	v=${values[$i]}
	# a request trace: arrival_s, prompt_tokens, output_tokens (row 3)
	for col in 1 2 3; do
		awk -F, -v OFS=, -v c=$col -v v="$v" 'NR == 3 { $c = v } 1' \
			"$src/tests/data/bad_traces/crlf.csv" | tr -d '\r' > t$i$col.csv
		key=$(head -1 t$i$col.csv | cut -d, -f$col)
		[ "$col" = 3 ] && [ "$v" = -3 ] || # a negative output: -3 is refused below
		check "trace $key=$v" t$i$col.csv 3 "$key" trace stats t$i$col.csv
	done
	# a job file: arrival_s, gpus, duration_s (row 3)
	for col in 1 2 3; do
		awk -F, -v OFS=, -v c=$col -v v="$v" 'NR == 3 { $c = v } 1' files/jobs.csv > j$i$col.csv
		key=$(head -1 j$i$col.csv | cut -d, -f$col)
		check "jobs $key=$v" j$i$col.csv 3 "$key" check jobs.yaml --set jobs.path=j$i$col.csv
	done
	# a failure trace: time_s, instance (row 2)
	printf 'time_s,instance\n%s,0\n' "$v" > f${i}1.csv
	printf 'time_s,instance\n1,%s\n' "$v" > f${i}2.csv
	check "failures time_s=$v" f${i}1.csv 2 time_s check base.yaml --set failures.trace=f${i}1.csv
	check "failures instance=$v" f${i}2.csv 2 instance check base.yaml --set failures.trace=f${i}2.csv
	# a carbon-intensity table: time_s, gco2_per_kwh (row 3)
	printf 'time_s,gco2_per_kwh\n0,100\n3600,%s\n' "$v" > c${i}2.csv
	printf 'time_s,gco2_per_kwh\n0,100\n%s,200\n' "$v" > c${i}1.csv
	check "carbon gco2_per_kwh=$v" c${i}2.csv 3 gco2_per_kwh check base.yaml --set power.carbon_trace=c${i}2.csv
	check "carbon time_s=$v" c${i}1.csv 3 time_s check base.yaml --set power.carbon_trace=c${i}1.csv
	# a perf table: dense.csv tokens and time_us (row 3)
	for col in 2 3; do
		rm -rf p$i$col && cp -R perf/all_zero p$i$col
		awk -F, -v OFS=, 'NR > 1 { $3 = NR } 1' perf/all_zero/tp1/dense.csv > dense.csv
		awk -F, -v OFS=, -v c=$col -v v="$v" 'NR == 3 { $c = v } 1' dense.csv > p$i$col/tp1/dense.csv
		key=$(head -1 dense.csv | cut -d, -f$col)
		check "perf $key=$v" p$i$col/tp1/dense.csv 3 "$key" check base.yaml \
			--set instances.0.perf=table --set instances.0.perf_table=p$i$col
	done
done

# a JSONL trace: arrival_time, input_toks, output_toks of line 2
for i in "${!json_values[@]}"; do
	v=${json_values[$i]}
	for key in arrival_time input_toks output_toks; do
		[ "$key" = output_toks ] && [ "$v" = -3 ] && continue
		sed "2s/\"$key\": [^,}]*/\"$key\": $v/" "$src/tests/data/bad_traces/bom_crlf.jsonl" \
			| tr -d '\r' | sed '1s/^\xef\xbb\xbf//' > q$i$key.jsonl
		check "jsonl $key=$v" q$i$key.jsonl 2 "$key" trace stats q$i$key.jsonl
	done
done
# a negative output token count is refused too
printf 'arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,10,-3\n' > neg.csv
check "trace output_tokens=-3" neg.csv 3 output_tokens trace stats neg.csv

echo "$((n - fails)) of $n hostile values refused with file, line and column"
[ $fails -eq 0 ]
