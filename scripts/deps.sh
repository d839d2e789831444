#!/usr/bin/env bash
# Installs the Debian packages strata links against (OpenBLAS, METIS), or
# prints the exact command when it cannot.
set -euo pipefail
missing=()
for p in "$@"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ! command -v go >/dev/null 2>&1; then
	echo "strata needs Go 1.26 or newer on PATH (https://go.dev/dl/)." >&2
	exit 2
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "strata needs these Debian packages: ${missing[*]}" >&2
	echo "install them with:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
	exit 2
fi
echo "installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
