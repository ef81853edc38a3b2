#!/usr/bin/env bash
# Builds scanned-document fixtures with hack/scan-fixtures/scan.py in its own virtual
# environment (Pillow and reportlab, pinned) under .cache/scan-fixtures/venv.
#   hack/scan-fixtures/scan.sh fixtures   # reader/testdata/ocr (committed)
#   hack/scan-fixtures/scan.sh scifact OUT [N]   # N (300) scanned SciFact abstracts
#   hack/scan-fixtures/scan.sh dossier OUT.pdf [PAGES]   # one scanned PDF of PAGES (300) pages of Dutch law
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$root/.cache/scan-fixtures/venv
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import PIL, reportlab' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q Pillow==11.3.0 reportlab==4.4.3
fi
data=${RAGOPS_DATASETS:-$root/../shared/datasets}
[[ -d $data/scifact ]] || data=/work/shared/datasets
case ${1:-} in
  fixtures) exec "$venv/bin/python" "$root/hack/scan-fixtures/scan.py" fixtures --corpus "$data/scifact" --out "$root/reader/testdata/ocr" ;;
  scifact) exec "$venv/bin/python" "$root/hack/scan-fixtures/scan.py" scifact --corpus "$data/scifact" --out "${2:?OUT}" --n "${3:-300}" ;;
  dossier) exec "$venv/bin/python" "$root/hack/scan-fixtures/scan.py" dossier --corpus "$data/legalqa-nl" --out "${2:?OUT.pdf}" --pages "${3:-300}" ;;
  *) echo "usage: $0 fixtures | scifact OUT [N] | dossier OUT.pdf [PAGES]" >&2; exit 2 ;;
esac
