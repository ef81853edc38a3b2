#!/usr/bin/env bash
# Prepares the OCR stage (reader/ocr): Tesseract 5 with the Dutch and English models, the
# Debian packages tesseract-ocr, tesseract-ocr-nld and tesseract-ocr-eng (the worker image
# installs the same, see Dockerfile). Installs them with apt-get when missing (needs root,
# as make test and make demo already do); when they are there it only checks them, in
# milliseconds. Prints RAGOPS_TESSERACT=<path>.
set -euo pipefail
need=(tesseract-ocr tesseract-ocr-nld tesseract-ocr-eng)
ok() {
	command -v tesseract >/dev/null 2>&1 || return 1
	local langs
	langs=$(tesseract --list-langs 2>/dev/null) || return 1
	grep -qx nld <<<"$langs" && grep -qx eng <<<"$langs"
}
if ! ok; then
	if [[ $(id -u) -ne 0 ]]; then
		echo "tesseract.sh: Tesseract with nld and eng is missing; run as root or: apt-get install ${need[*]}" >&2
		exit 1
	fi
	echo "tesseract.sh: installing ${need[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
	ok || { echo "tesseract.sh: installed but tesseract still lacks nld or eng" >&2; exit 1; }
fi
version=$(tesseract --version 2>&1 | head -n1)
if [[ $version != "tesseract 5."* ]]; then
	echo "tesseract.sh: need Tesseract 5, found: $version" >&2
	exit 1
fi
echo "RAGOPS_TESSERACT=$(command -v tesseract)"
