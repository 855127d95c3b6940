#!/usr/bin/env bash
# A sweep spread over 3 MPI ranks, and the same sweep run as two shards and merged, write
# exactly what one process writes: results.csv, results.json and status, byte for byte.
#   tests/cli/mpi_sweep_test.sh PODSIM CONFIG
set -euo pipefail
podsim=$1
config=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# OpenMPI in a container: as root (CI) it needs --allow-run-as-root; shared-memory transfers
# without the cross-memory-attach syscalls containers often forbid. LeakSanitizer would report
# OpenMPI's own allocations kept until exit.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
"$podsim" run "$config" --out "$out/one" > /dev/null 2>&1
mpirun --allow-run-as-root --oversubscribe -np 3 "$podsim" run "$config" --out "$out/mpi" \
  > "$out/mpi.log" 2>&1 || { cat "$out/mpi.log"; exit 1; }
"$podsim" run "$config" --out "$out/shard0" --shard 0/2 > /dev/null 2>&1
"$podsim" run "$config" --out "$out/shard1" --shard 1/2 > /dev/null 2>&1
"$podsim" run "$config" --out "$out/merged" --merge "$out/shard0" --merge "$out/shard1" \
  > /dev/null 2>&1
fail=0
for run in mpi merged; do
  for f in results.csv results.json status; do
    if ! cmp -s "$out/one/$f" "$out/$run/$f"; then
      echo "$run/$f differs from the one-process run's"
      diff "$out/one/$f" "$out/$run/$f" | head -5
      fail=1
    fi
  done
done
# Each shard holds its own points only: together every point once.
rows0=$(($(wc -l < "$out/shard0/results.csv") - 1))
rows1=$(($(wc -l < "$out/shard1/results.csv") - 1))
rows=$(($(wc -l < "$out/one/results.csv") - 1))
if [ $((rows0 + rows1)) -ne "$rows" ]; then
  echo "shards hold $rows0 + $rows1 rows, the sweep $rows"
  fail=1
fi
# Exactly one summary line: rank 0's.
if [ "$(grep -c 'points:' "$out/mpi.log")" -ne 1 ]; then
  echo "mpirun printed $(grep -c 'points:' "$out/mpi.log") summary lines:"; cat "$out/mpi.log"
  fail=1
fi
[ $fail -eq 0 ] && echo "mpi (3 ranks) and 2 merged shards equal the one-process run"
exit $fail
