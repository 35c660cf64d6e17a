#!/bin/sh
# test_data_dir.sh - where llmsim finds hardware profiles and models
# (docs/config.md, "Data files"): --data-dir and $LLMSIM_DATA_DIR folders
# searched before the shipped data, a profile or a model given as a file,
# and the errors when a name is found nowhere. The user's profile is the
# shipped H100-SXM renamed with 10% more memory bandwidth, so a run on it
# must differ from one on the shipped profile, and its own run id must
# follow its contents, not its path.
set -u
exe=${LSIM_EXE:-build/llmsim}
src=${LSIM_SOURCE_ROOT:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $*"; }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }

mkdir -p "$tmp/data/profiles" "$tmp/scen/hw" "$tmp/other"
bw=$(awk '$1 == "mem_bw:" { print $2; exit }' "$src/calibrate/profiles/H100-SXM.yaml")
awk -v bw="$bw" '/^name:/ { print "name: MyGPU"; next }
	/^hbm_bw:/ { print "hbm_bw: 3685GB/s"; next } { print }' \
	"$src/calibrate/profiles/H100-SXM.yaml" > "$tmp/data/profiles/MyGPU.yaml"
grep -q "^name: MyGPU" "$tmp/data/profiles/MyGPU.yaml" && grep -q "^hbm_bw:" "$tmp/data/profiles/MyGPU.yaml" \
	|| bad "the test's profile: no name or hbm_bw line to change in H100-SXM.yaml"
cp "$tmp/data/profiles/MyGPU.yaml" "$tmp/scen/hw/MyGPU.yaml"
# one model of its own; the shipped catalogue's models stay found
cat > "$tmp/data/models.yaml" <<'Y'
models:
  - name: Tiny-1B
    source: "a test model: Llama-3.2-1B's shapes"
    layers: 16
    hidden: 2048
    heads: 32
    kv_heads: 8
    head_dim: 64
    intermediate: 8192
    vocab: 128256
    gated_mlp: true
    experts: 0
    experts_per_token: 0
    params: 1.24e9
    bytes_per_param: 2
    max_context: 131072
Y
cp "$tmp/data/models.yaml" "$tmp/scen/hw/tiny.yaml"
scen() { # GPU MODEL > scenario
	cat <<Y
name: data_dir
seed: 1
instances:
  - {model: $2, gpu: $1, perf: roofline, num_gpu_blocks: 4096}
workload: {kind: generator, arrival: poisson, rate: 2, count: 40, prompt: {dist: fixed, value: 512}, output: {dist: fixed, value: 64}}
output: {sample_period: 0s}
Y
}
scen MyGPU Llama-3.1-8B > "$tmp/scen/by_name.yaml"
scen hw/MyGPU.yaml Llama-3.1-8B > "$tmp/scen/by_path.yaml"
scen H100-SXM Llama-3.1-8B > "$tmp/scen/shipped.yaml"
scen H100-SXM Tiny-1B > "$tmp/scen/tiny.yaml"
scen H100-SXM hw/tiny.yaml > "$tmp/scen/tiny_path.yaml"

tpot() { awk -F, '$1 == "tpot_mean_s" { print $2 }' "$1/summary.csv"; }
rid() { awk '$1 == "run" { print $2; exit }' "$1"; }

# not found anywhere: the profile's name and the file looked for
"$exe" check "$tmp/scen/by_name.yaml" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "no hardware profile 'MyGPU'" "$tmp/err" \
	&& ok "an unknown profile is refused" || bad "unknown profile: rc=$rc $(cat "$tmp/err")"

"$exe" run "$tmp/scen/by_name.yaml" -o "$tmp/o_dd" --csv --data-dir "$tmp/other" --data-dir "$tmp/data" >"$tmp/o1" 2>"$tmp/err" \
	|| bad "--data-dir: $(cat "$tmp/err")"
LLMSIM_DATA_DIR="$tmp/other:$tmp/data" "$exe" run "$tmp/scen/by_name.yaml" -o "$tmp/o_env" --csv >"$tmp/o2" 2>"$tmp/err" \
	|| bad "LLMSIM_DATA_DIR: $(cat "$tmp/err")"
"$exe" run "$tmp/scen/by_path.yaml" -o "$tmp/o_path" --csv >"$tmp/o3" 2>"$tmp/err" || bad "profile as a path: $(cat "$tmp/err")"
"$exe" run "$tmp/scen/shipped.yaml" -o "$tmp/o_ship" --csv --data-dir "$tmp/data" >"$tmp/o4" 2>"$tmp/err" \
	|| bad "shipped profile with --data-dir: $(cat "$tmp/err")"
a=$(tpot "$tmp/o_dd") b=$(tpot "$tmp/o_env") c=$(tpot "$tmp/o_path") s=$(tpot "$tmp/o_ship")
# decode at batch <= 4 streams the weights: 10% more bandwidth, TPOT
# shorter by about 1 - 1/1.1 = 9.1% (less the fixed costs)
[ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ] \
	&& awk -v a="$a" -v s="$s" 'BEGIN { r = 1 - a / s; exit !(r > 0.05 && r < 0.0910) }' \
	&& ok "MyGPU found by --data-dir, LLMSIM_DATA_DIR and as a path: TPOT $a s against $s s on H100-SXM" \
	|| bad "MyGPU TPOT: --data-dir $a, env $b, path $c, shipped $s"
# the run id: the same contents in another folder, the same id; one
# byte changed, another
mkdir -p "$tmp/copy/profiles" "$tmp/changed/profiles"
cp "$tmp/data/profiles/MyGPU.yaml" "$tmp/copy/profiles/"
sed 's/^hbm_bw: 3685GB\/s/hbm_bw: 3686GB\/s/' "$tmp/data/profiles/MyGPU.yaml" > "$tmp/changed/profiles/MyGPU.yaml"
"$exe" run "$tmp/scen/by_name.yaml" -o "$tmp/o_copy" --data-dir "$tmp/copy" >"$tmp/o5" 2>&1
"$exe" run "$tmp/scen/by_name.yaml" -o "$tmp/o_chg" --data-dir "$tmp/changed" >"$tmp/o6" 2>&1
r1=$(rid "$tmp/o1") r2=$(rid "$tmp/o2") r5=$(rid "$tmp/o5") r6=$(rid "$tmp/o6")
[ -n "$r1" ] && [ "$r1" = "$r2" ] && [ "$r1" = "$r5" ] && [ -n "$r6" ] && [ "$r1" != "$r6" ] \
	&& ok "the run id follows the profile found, by contents" || bad "run ids $r1 $r2 $r5 $r6"

# models: the data folder's catalogue, then the shipped one; or a file
"$exe" check "$tmp/scen/tiny.yaml" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "unknown model 'Tiny-1B'" "$tmp/err" \
	&& ok "an unknown model is refused" || bad "unknown model: rc=$rc $(cat "$tmp/err")"
"$exe" run "$tmp/scen/tiny.yaml" -o "$tmp/t1" --csv --data-dir "$tmp/data" >/dev/null 2>"$tmp/err" || bad "model by --data-dir: $(cat "$tmp/err")"
"$exe" run "$tmp/scen/tiny_path.yaml" -o "$tmp/t2" --csv >/dev/null 2>"$tmp/err" || bad "model as a path: $(cat "$tmp/err")"
t1=$(tpot "$tmp/t1") t2=$(tpot "$tmp/t2")
[ -n "$t1" ] && [ "$t1" = "$t2" ] && awk -v t="$t1" -v s="$s" 'BEGIN { exit !(t < s / 3) }' \
	&& ok "Tiny-1B from --data-dir and as a file: TPOT $t1 s (Llama-3.1-8B $s s)" || bad "Tiny-1B TPOT $t1 / $t2 vs $s"
printf 'models:\n  - {name: A}\n  - {name: B}\n' > "$tmp/scen/hw/two.yaml"
scen H100-SXM hw/two.yaml > "$tmp/scen/two.yaml"
"$exe" check "$tmp/scen/two.yaml" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "holds exactly one model" "$tmp/err" \
	&& ok "a model file of two models is refused" || bad "two-model file: rc=$rc $(cat "$tmp/err")"
"$exe" check "$tmp/scen/by_name.yaml" --data-dir >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "data-dir needs a folder" "$tmp/err" && ok "--data-dir without a folder" || bad "--data-dir alone: rc=$rc"
# profile collective takes --gpu from the search path too
"$exe" profile collective --gpu MyGPU --n 2 --bytes 1048576 --data-dir "$tmp/data" >/dev/null 2>"$tmp/err" \
	&& ok "profile collective --gpu from --data-dir" || bad "collective: $(cat "$tmp/err")"

# validate's --profile PERF_DIR: a folder where one is there, else a path in
# the data folders (--data-dir, then the shipped data: perf/...), so the
# same command works in the source tree and from an install
rel=llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16
vrun=$(cd "$src/examples/data/vllm_runs/RTX4090/Llama-3.1-8B" && pwd)
"$exe" validate "$vrun" --profile "$(cd "$src" && pwd)/calibrate/perf/$rel" > "$tmp/v_abs" 2>&1 || bad "validate: $(cat "$tmp/v_abs")"
(cd "$tmp/other" && "$exe" validate "$vrun" --profile "perf/$rel") > "$tmp/v_rel" 2>&1
grep -q "ttft p99" "$tmp/v_abs" && cmp -s "$tmp/v_abs" "$tmp/v_rel" \
	&& ok "validate --profile perf/... finds the shipped table" || bad "validate --profile perf/...: $(head -3 "$tmp/v_rel")"
mkdir -p "$tmp/pd/perf/mine"
cp -r "$src/calibrate/perf/$rel/." "$tmp/pd/perf/mine/"
(cd "$tmp/other" && "$exe" validate "$vrun" --profile perf/mine --data-dir "$tmp/pd") > "$tmp/v_dd" 2>&1
cmp -s "$tmp/v_abs" "$tmp/v_dd" && ok "validate --profile perf/mine from --data-dir" || bad "--data-dir perf: $(head -3 "$tmp/v_dd")"
mkdir -p "$tmp/other/perf/$rel" # an empty folder there: it is the one read, and refused
(cd "$tmp/other" && "$exe" validate "$vrun" --profile "perf/$rel") >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "^llmsim: perf/$rel/tp1" "$tmp/err" \
	&& ok "a folder that is there comes before the data folders" || bad "local perf folder: rc=$rc $(cat "$tmp/err")"
(cd "$tmp/other" && "$exe" validate "$vrun" --profile perf/none) >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "perf/none" "$tmp/err" && ok "a PERF_DIR found nowhere is refused naming it" \
	|| bad "perf/none: rc=$rc $(cat "$tmp/err")"

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
