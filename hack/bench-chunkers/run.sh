#!/usr/bin/env bash
# Runs ragops chunkers and the Python peers (pinned) side by side on the same texts and
# parameters, prints one table and writes it into BENCHMARKS.md's "## Chunkers" section.
# Needs python3 (venv) and Go; the venv is cached under .cache/bench-chunkers/ by version.
# RAGOPS_DATASETS points at the folder holding scifact/ and qmsum/ (default ../shared/datasets).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cache=.cache/bench-chunkers
peers="chonkie==1.7.0 langchain-text-splitters==1.1.3 semchunk==4.1.1"
datasets=${RAGOPS_DATASETS:-$root/../shared/datasets}
size=${SIZE:-512}
reps=${REPS:-3}
mkdir -p "$cache"
if [ "$(cat "$cache/venv/.pinned" 2>/dev/null)" != "$peers" ]; then
  rm -rf "$cache/venv"
  python3 -m venv "$cache/venv"
  "$cache/venv/bin/pip" install --quiet $peers
  echo "$peers" > "$cache/venv/.pinned"
fi
py="$cache/venv/bin/python"
"$py" hack/bench-chunkers/peers.py prepare "$datasets" "$cache" "$root"
go build -o "$cache/bench-chunkers" ./hack/bench-chunkers
: > "$cache/results.jsonl"
for corpus in scifact qmsum markdown; do
  "$cache/bench-chunkers" -docs "$cache/$corpus.json" -corpus "$corpus" -size "$size" -reps "$reps" >> "$cache/results.jsonl"
  "$py" hack/bench-chunkers/peers.py bench "$cache/$corpus.json" "$corpus" "$size" "$reps" >> "$cache/results.jsonl"
done
"$py" hack/bench-chunkers/peers.py table "$cache/results.jsonl" BENCHMARKS.md
