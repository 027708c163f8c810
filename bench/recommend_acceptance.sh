#!/bin/bash
# The four acceptance runs of `bertlens recommend` (issue #17): default model, 15-minute budget, one after another,
# each alone on the machine; wall time and peak memory from /usr/bin/time -v.
# Usage: bench/recommend_acceptance.sh [TASK ...]   (default: sst2 stsb trec movie_reviews; reports in out/rec/TASK/)
set -e
cd "$(dirname "$0")/.."
tasks=("$@")
[ ${#tasks[@]} -eq 0 ] && tasks=(sst2 stsb trec movie_reviews)
mkdir -p out/rec
for t in "${tasks[@]}"; do
  rm -rf "out/rec/$t"
  /usr/bin/time -v .venv/bin/bertlens recommend --task "$t" --budget-minutes 15 --out "out/rec/$t" 2> "out/rec/$t.err"
  grep -E "Elapsed|Maximum resident" "out/rec/$t.err"
done
