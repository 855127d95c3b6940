#!/usr/bin/env bash
# docs/reproduction.md against a fresh run: runs the seven experiments whose tables it shows and
# checks the page's generated blocks (tools/reproduction_tables.py --check).
#   tests/tools/check_reproduction_doc.sh PODSIM_BINARY SOURCE_DIR PYTHON
set -euo pipefail
podsim=$1
src=$2
python=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for x in fig9 fig8 table1 table3 fig7; do
  "$podsim" run "$src/experiments/gshard_$x.json" --out "$out/$x" > /dev/null
done
# The dense baseline's MoE comparison comes from the Table 3 run: its own MoE point is skipped.
"$podsim" run "$src/experiments/gshard_dense_baseline.json" --set moe_reference=null \
  --set trace=false --out "$out/dense" > /dev/null 2>&1
"$podsim" run "$src/experiments/spatial_partitioning.json" --out "$out/spatial" > /dev/null 2>&1
"$python" "$src/tools/reproduction_tables.py" --fig9 "$out/fig9" --fig8 "$out/fig8" \
  --table1 "$out/table1" --table3 "$out/table3" --fig7 "$out/fig7" \
  --dense_baseline "$out/dense" --spatial_partitioning "$out/spatial" --check "$src/docs/reproduction.md"
