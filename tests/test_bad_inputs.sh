#!/usr/bin/env bash
# test_bad_inputs.sh - the bad-input catalogue (tests/bad_inputs/cases.tsv,
# described in tests/bad_inputs/README.md): runs every case and checks its
# exit code, that stderr holds each expected fragment, that llmsim did not
# crash (no signal, no sanitizer report) and that the case's output folder
# holds no file a finished run writes. One ok/FAIL line per case.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
catalogue=$src/tests/bad_inputs
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
# the cases run in a copy of the catalogue, so that its relative paths hold
# and nothing is written next to the sources
mkdir -p "$tmp/cases" "$tmp/out" "$tmp/scratch"
cp -R "$catalogue/." "$tmp/cases/"
fails=0 n=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }
# an AddressSanitizer build cannot run under a virtual memory limit
asan=false
ldd "$exe" 2>/dev/null | grep -q libasan && asan=true

# expand TEXT: the placeholders of cases.tsv (README.md) for the current case
expand() {
	local s=$1
	s=${s//@O/$out}
	s=${s//@T/$scratch}
	s=${s//@SRC/$src}
	s=${s//@BAD_ABI/${LSIM_BAD_PLUGIN:-}}
	s=${s//@SCALE_UP/${LSIM_SCALE_UP_PLUGIN:-}}
	s=${s//@EXAMPLE/${LSIM_EXAMPLE_PLUGIN:-}}
	s=${s//@MISBEHAVE/${LSIM_MISBEHAVE_PLUGIN:-}}
	s=${s//@BROKEN_NULL_NAME/${LSIM_BROKEN_NULL_NAME_PLUGIN:-}}
	s=${s//@BROKEN_PARAM_OFFSET/${LSIM_BROKEN_PARAM_OFFSET_PLUGIN:-}}
	s=${s//@BROKEN_DATA_ENTRY/${LSIM_BROKEN_DATA_ENTRY_PLUGIN:-}}
	printf '%s' "$s"
}

while IFS=$'\t' read -r name category command args setup want fragments; do
	case "$name" in '' | '#'* | name) continue ;; esac
	n=$((n + 1))
	out=$tmp/out/$name scratch=$tmp/scratch/$name
	mkdir -p "$out" "$scratch"
	read -ra argv <<< "$(expand "$args")"
	setup=$(expand "$setup")
	limit=() asan_opts=${ASAN_OPTIONS:-}
	case "$setup" in
	-) ;;
	file=*) mkdir -p "$(dirname "${setup#file=}")" && : > "${setup#file=}" ;;
	fifo=*) # a named pipe: opening it for reading would wait for a writer
		mkdir -p "$(dirname "${setup#fifo=}")" && mkfifo "${setup#fifo=}" ;;
	full=*) # writes to this path fail with ENOSPC, as on a full disk
		mkdir -p "$(dirname "${setup#full=}")" && ln -s /dev/full "${setup#full=}" ;;
	fsize=*) # the file size limit: writes beyond it fail with EFBIG
		limit=(fsize "${setup#fsize=}") ;;
	mem) # allocations beyond a few hundred MB fail, as when memory runs
		# out (a run of base.yaml needs under 500 MB of address space)
		if $asan; then
			asan_opts="${asan_opts:+$asan_opts:}allocator_may_return_null=1:max_allocation_size_mb=200"
		else
			limit=(vmem 800000)
		fi ;;
	readonly=*) # permissions do not stop root
		if [ "$(id -u)" -eq 0 ]; then
			ok "$name # SKIP root ignores folder permissions"
			continue
		fi
		mkdir -p "${setup#readonly=}" && chmod 555 "${setup#readonly=}" ;;
	*) bad "$name: unknown setup '$setup'"; continue ;;
	esac
	(
		cd "$tmp/cases" || exit 99
		export ASAN_OPTIONS=$asan_opts
		case "${limit[0]:-}" in
		fsize) trap '' XFSZ; ulimit -f "${limit[1]}" ;;
		vmem) ulimit -v "${limit[1]}" ;;
		esac
		exec "$exe" "$command" "${argv[@]}"
	) </dev/null >"$scratch/stdout" 2>"$scratch/stderr"
	rc=$?
	err=$(cat "$scratch/stderr")
	if [ "$rc" -ge 128 ]; then
		bad "$name: killed by signal $((rc - 128)): $err"
		continue
	fi
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|Sanitizer:DEADLYSIGNAL' "$scratch/stderr"; then
		bad "$name: sanitizer report: $err"
		continue
	fi
	if [ "$rc" -ne "$want" ]; then
		bad "$name: exit $rc, want $want: $err"
		continue
	fi
	if ! grep -q '^llmsim: ' "$scratch/stderr"; then
		bad "$name: no 'llmsim: ' message: $err"
		continue
	fi
	missing=
	rest=$fragments
	while [ -n "$rest" ]; do
		frag=${rest%% ;; *}
		[ "$frag" = "$rest" ] && rest= || rest=${rest#* ;; }
		frag=$(expand "$frag")
		case "$err" in *"$frag"*) ;; *) missing=$frag; break ;; esac
	done
	if [ -n "$missing" ]; then
		bad "$name: '$missing' not in: $err"
		continue
	fi
	# nothing that looks like a run's output (a sweep keeps its database,
	# which records the runs that finished: none here, and its lock file)
	left=$(find "$out" -type f ! -path "$out/results.sqlite" ! -path "$out/sweep.lock" 2>/dev/null)
	[ "$command" = sweep ] || left=$(find "$out" -type f 2>/dev/null)
	if [ -n "$left" ]; then
		bad "$name: left behind: $(echo "$left" | sed "s|$out/||" | tr '\n' ' ')"
		continue
	fi
	ok "$name"
done < "$catalogue/cases.tsv"

echo "bad inputs: $n cases, $fails failure(s)"
[ "$n" -ge 60 ] || { echo "FAIL - the catalogue holds $n cases, fewer than 60"; exit 1; }
[ "$fails" -eq 0 ]
