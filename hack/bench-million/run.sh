#!/usr/bin/env bash
# A collection of N (default 1,000,000) chunk objects (issue 56): starts its own throwaway
# Weaviate (bin/weaviate-server, hack/weaviate.sh) on fixed ports from 18675 with its state and
# data under $RAGOPS_BENCH_WORK (default .cache/bench-million), at nice $RAGOPS_BENCH_NICE
# (default 0: the server's HNSW inserts are the import's bottleneck); imports the objects (import: objects/s; with
# RAGOPS_BENCH_UNTIL=HH:MM, UTC, it stops after the batch that ends past that time and the rest
# runs on what was imported), writes the queries and qrels for them (gen), then evaluates 2,000 queries dense, BM25 and hybrid,
# each in its own process (eval: p50/p99 per query, searches per query, peak RSS); stops the
# server and removes its data at the end.
#   hack/bench-million/run.sh [N] [QUERIES]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
n=${1:-1000000}
queries=${2:-2000}
work=${RAGOPS_BENCH_WORK:-$root/.cache/bench-million}
nice=${RAGOPS_BENCH_NICE:-0}
corpus=${RAGOPS_DATASETS:-/work/shared/datasets}/legalqa-nl/corpus.jsonl
mkdir -p "$work"
export RAGOPS_WEAVIATE_STATE=$work/weaviate RAGOPS_WEAVIATE_PORT_BASE=${RAGOPS_WEAVIATE_PORT_BASE:-18675}
go build -o "$work/bench-million" ./hack/bench-million
nice -n "$nice" hack/weaviate.sh start >&2
trap 'hack/weaviate.sh stop >&2 || true' EXIT
eval "$(hack/weaviate.sh env)"
http=$RAGOPS_WEAVIATE_HTTP_HOST grpc=$RAGOPS_WEAVIATE_GRPC_HOST
echo "load before: $(cat /proc/loadavg)"
nice -n "$nice" "$work/bench-million" import -corpus "$corpus" -objects "$n" -http "$http" -grpc "$grpc" \
  -until "${RAGOPS_BENCH_UNTIL:-}" -count-file "$work/imported"
n=$(cat "$work/imported")
nice -n "$nice" "$work/bench-million" gen -corpus "$corpus" -objects "$n" -queries "$queries" -out "$work/data"
echo "load after import: $(cat /proc/loadavg)"
for mode in dense bm25 hybrid; do
  nice -n "$nice" "$work/bench-million" eval -corpus "$corpus" -objects "$n" -queries "$queries" -out "$work/data" -mode "$mode" -http "$http" -grpc "$grpc"
  echo "load: $(cat /proc/loadavg)"
done
