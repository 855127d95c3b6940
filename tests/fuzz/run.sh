#!/usr/bin/env bash
# Runs the libFuzzer targets of a PODSIM_FUZZ build for a bounded time each (docs/testing.md).
#
#   tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET ...]     (targets default to all five)
#
# Each target starts from its seeds: tests/fuzz/corpus/<target>/ (small, checked in) plus the
# shipped inputs it reads (IR modules, topology presets, experiment configs), copied into
# BUILD_DIR/fuzz/<target>/corpus, where new inputs accumulate (never in the source tree). A
# crash, a sanitizer report, a leak, a timeout (10 s per input) or an input using more than
# 2 GiB fails the run; the reproducer is BUILD_DIR/fuzz/<target>/crash-* and is printed.
set -euo pipefail
build=$(cd "$1" && pwd)
seconds=$2
shift 2
src=$(cd "$(dirname "$0")/../.." && pwd)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ir_text ir_proto hlo_import topology experiment_config)

seed() {  # seed TARGET: the shipped files that target reads
  case $1 in
    ir_text) ls "$src"/experiments/*.hlo "$src"/tests/cli/data/*.hlo ;;
    ir_proto) ;;
    # The small real modules beside the project, when they are there (never copied into it).
    hlo_import) ls "$src"/../shared/hlo-corpus/*.hlo 2>/dev/null | grep -v model_ || true ;;
    topology) ls "$src"/topologies/presets/*.json ;;
    experiment_config) ls "$src"/experiments/*.json "$src"/tests/cli/data/*.json ;;
  esac
}

status=0
for t in "${targets[@]}"; do
  dir=$build/fuzz/$t
  mkdir -p "$dir/corpus"
  cp "$src"/tests/fuzz/corpus/"$t"/* "$dir/corpus/"
  for f in $(seed "$t"); do cp "$f" "$dir/corpus/"; done
  dict=()
  [ -f "$src/tests/fuzz/$t.dict" ] && dict=(-dict="$src/tests/fuzz/$t.dict")
  echo "fuzz: $t for $seconds s"
  if ! (cd "$dir" && PODSIM_DATA_DIR="$build/share/podsim" \
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$build/tests/fuzz/${t}_fuzz" "${dict[@]}" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 corpus > log.txt 2>&1); then
    status=1
    grep -v "^#[0-9]" "$dir/log.txt" | tail -n 40
    for c in "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*; do
      [ -f "$c" ] || continue
      echo "fuzz: $t: reproducer $c ($(stat -c %s "$c") bytes), base64:"
      base64 -w 0 "$c" | head -c 4096
      echo
    done
  fi
  grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$dir/log.txt" | sed "s/^/fuzz: $t: /" || true
done
exit $status
