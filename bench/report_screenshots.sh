#!/bin/bash
# Real reports (default model, small samples), then one screenshot per report kind in docs/images/ (the recommend
# report is out/rec/movie_reviews from bench/recommend_acceptance.sh). Usage: bench/report_screenshots.sh
set -e
cd "$(dirname "$0")/.." && source .venv/bin/activate
S=out/shots; mkdir -p $S
head -n 400 ${BERTLENS_DATA:-../shared/data}/movie_reviews/reviews.jsonl > $S/reviews.jsonl
bertlens sweep --task trec --out $S/sweep --quiet
bertlens geometry --task stsb --max-texts 1000 --out $S/geometry --quiet
bertlens longdoc --task movie_reviews --max-examples 300 --folds 5 --strategies head,tail,head_tail:64,windows:mean,hier:gru --out $S/longdoc --quiet
bertlens probe --suite linguistic --tasks upos,deprel,tense,bigram_shift --max-sentences 2000 --out $S/probe --quiet
bertlens compare --task sst2 --sizes 100,500 --strategies frozen,full --seeds 2 --drift-texts 100 --out $S/compare --quiet
bertlens domain --texts $S/reviews.jsonl --column text --out $S/domain --quiet
python bench/report_screenshots.py --out docs/images $S/sweep $S/geometry $S/longdoc $S/probe $S/compare $S/domain out/rec/movie_reviews
