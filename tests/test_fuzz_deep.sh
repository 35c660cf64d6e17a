#!/bin/sh
# test_fuzz_deep.sh - the deep fuzz run of docs/reliability.md (suite slow,
# -Dslow_tests=true): 10^7 inputs of each parser target (the YAML tree and
# overrides, the CSV and JSONL trace readers, format detection) through
# scripts/fuzz, which builds the libFuzzer targets with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer in build-fuzz/ of the source tree and fails
# on any crash, leak, timeout or sanitizer report. What each target grows is
# kept in the build folder's fuzz-grown/<target>, to merge into
# tests/fuzz/corpus as docs/reliability.md shows. Skipped (77) without
# clang. Hours on a 2-core machine: LSIM_FUZZ_RUNS and LSIM_FUZZ_SECONDS
# (per target) bound it.
set -u
src=${LSIM_SOURCE_ROOT:?}
build=${LSIM_BUILD_ROOT:?}
command -v clang >/dev/null 2>&1 || { echo "SKIP - no clang"; exit 77; }
LSIM_FUZZ_KEEP=$build/fuzz-grown \
LSIM_FUZZ_RUNS=${LSIM_FUZZ_RUNS:-10000000} \
LSIM_FUZZ_SECONDS=${LSIM_FUZZ_SECONDS:-3600} \
	exec "$src/scripts/fuzz" yaml csv_trace jsonl_trace trace_auto
