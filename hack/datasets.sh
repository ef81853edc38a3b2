#!/usr/bin/env bash
# Prints the folder holding the BEIR data sets scifact/, qmsum/ and legalqa-nl/:
#   1. RAGOPS_DATASETS when set;
#   2. else ../shared/datasets beside the clone (the full data sets, as CI has them);
#   3. else the copies kept in the repository (hack/demo/{scifact,qmsum,legalqa-nl}.tar.gz: the
#      corpora, queries, the qrels the demos use and the spans), unpacked once into .cache/datasets.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -n "${RAGOPS_DATASETS:-}" ]]; then
	echo "$RAGOPS_DATASETS"
	exit 0
fi
if [[ -f "$root/../shared/datasets/scifact/corpus.jsonl" ]]; then
	(cd "$root/../shared/datasets" && pwd)
	exit 0
fi
out=$root/.cache/datasets
for d in scifact qmsum legalqa-nl; do
	if [[ ! -f "$out/$d/corpus.jsonl" ]]; then
		mkdir -p "$out"
		tar -xzf "$root/hack/demo/$d.tar.gz" -C "$out"
	fi
done
echo "$out"
