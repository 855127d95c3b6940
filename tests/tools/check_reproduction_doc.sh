#!/usr/bin/env bash
# docs/reproduction.md against a fresh run: runs the five experiments whose tables it shows and
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
"$python" "$src/tools/reproduction_tables.py" --fig9 "$out/fig9" --fig8 "$out/fig8" \
  --table1 "$out/table1" --table3 "$out/table3" --fig7 "$out/fig7" --check "$src/docs/reproduction.md"
