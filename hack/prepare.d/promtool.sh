#!/usr/bin/env bash
# Prepares the checks of the chart's PrometheusRule and dashboard: promtool (test/packaging) and
# the prometheus server (test/monitoring runs it against a manager), both from Debian's
# prometheus package (installed without recommends; the package's own service is not used).
# Installs it with apt-get when missing (needs root, as make test already does); when it is
# there it only checks it, in milliseconds. Prints RAGOPS_PROMTOOL=<path> and
# RAGOPS_PROMETHEUS=<path>.
set -euo pipefail
ok() {
	command -v promtool >/dev/null 2>&1 && promtool --version >/dev/null 2>&1 &&
		command -v prometheus >/dev/null 2>&1 && prometheus --version >/dev/null 2>&1
}
if ! ok; then
	if [[ $(id -u) -ne 0 ]]; then
		echo "promtool.sh: promtool is missing; run as root or: apt-get install --no-install-recommends prometheus" >&2
		exit 1
	fi
	echo "promtool.sh: installing prometheus (promtool and the server)" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends prometheus >&2
	ok || { echo "promtool.sh: installed but promtool or prometheus does not run" >&2; exit 1; }
fi
version=$(promtool --version 2>&1)
version=${version%%$'\n'*} # the first line (no `| head`: SIGPIPE under pipefail)
if [[ $version != "promtool, version 2."* && $version != "promtool, version 3."* ]]; then
	echo "promtool.sh: need promtool 2 or 3, found: $version" >&2
	exit 1
fi
version=$(prometheus --version 2>&1)
version=${version%%$'\n'*}
if [[ $version != "prometheus, version 2."* && $version != "prometheus, version 3."* ]]; then
	echo "promtool.sh: need prometheus 2 or 3, found: $version" >&2
	exit 1
fi
echo "RAGOPS_PROMTOOL=$(command -v promtool)"
echo "RAGOPS_PROMETHEUS=$(command -v prometheus)"
