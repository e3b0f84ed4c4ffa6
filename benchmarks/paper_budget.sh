#!/usr/bin/env bash
# One slice of a paper-budget run (issue 73): train NAME from PRESET, or resume it where a
# previous slice left it, for at most LIMIT seconds; then pack the run folder into
# $OUT/NAME.tgz.part-* so that it survives the machine being handed back.
#
#   bash benchmarks/paper_budget.sh NAME PRESET SEEDS LIMIT RUNS [train options...]
#
# RUNS holds the run folders (carry it back, unpacked, for the next slice). The run is
# minimax's configuration (the preset's defaults: 32 envs x 256 steps, 30,000 PPO updates);
# the options here only set how often it checkpoints and evaluates, which changes no result.
set -euo pipefail
[ $# -ge 5 ] || { echo "error: usage: bash benchmarks/paper_budget.sh NAME PRESET SEEDS LIMIT RUNS [train options...]" >&2; exit 2; }
name=$1 preset=$2 seeds=$3 limit=$4 runs=$5
shift 5
py=${PYTHON:-python3}
mkdir -p "$runs"
if [ -f "$runs/$name/config.json" ]; then
  echo "resuming $runs/$name"
  "$py" -m arenax.cli resume "$runs/$name" --time-limit "$limit" --no-progress
else
  "$py" -m arenax.cli train "$preset" --seeds "$seeds" --time-limit "$limit" --chunk 50 \
    --checkpoint-every 500 --archive-every 0 --eval.every 2000 --out-dir "$runs" --name "$name" \
    --no-progress "$@"
fi
if [ -n "${OUT:-}" ]; then
  # files come back from the machine in pieces of at most 16 MiB: cat the parts, then untar
  tar cz --exclude=.lock -C "$runs" "$name" | split -b 15M - "$OUT/$name.tgz.part-"
  ls -la "$OUT"
fi
