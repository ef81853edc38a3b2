#!/usr/bin/env bash
# A scanned dossier read before and after (issue 56): builds hack/bench-scan at this tree and
# at BASE (default 8e7efda, the reading path that copies the whole file, via git archive into
# a temporary folder), then reads each PDF given with both binaries in turn, niced, printing
# pages by OCR, seconds, CPU seconds and peak RSS. Make the PDFs with
#   hack/scan-fixtures/scan.sh dossier /tmp/dossier-300.pdf 300
# Needs Tesseract with nld and eng (source /work/testenv.sh or RAGOPS_TESSERACT).
#   hack/bench-scan/run.sh [-base COMMIT] [-after-only] [-ocr Never] FILE.pdf...
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
base=8e7efda after_only= mode=Auto
while [[ ${1:-} == -* ]]; do
  case $1 in
    -base) base=$2; shift 2 ;;
    -after-only) after_only=1; shift ;;
    -ocr) mode=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/after" ./hack/bench-scan
if [[ -z $after_only ]]; then
  mkdir "$work/base"
  git archive "$base" | tar -x -C "$work/base"
  cp -r hack/bench-scan "$work/base/hack/"
  (cd "$work/base" && go build -o "$work/before" ./hack/bench-scan)
fi
export OMP_THREAD_LIMIT=1
for f in "$@"; do
  for which in before after; do
    [[ -x $work/$which ]] || continue
    echo "$which ($([[ $which == before ]] && echo "$base" || git rev-parse --short HEAD)), load $(cut -d' ' -f1-3 /proc/loadavg):"
    nice -n 10 "$work/$which" -ocr "$mode" -pdf "$f"
  done
done
