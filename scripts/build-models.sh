#!/usr/bin/env bash
# Builds the WebAssembly guest modules that the strata binary embeds:
#   models/layers/<name>     -> models/wasm/<name>.wasm
#   models/costmodels/<name> -> models/wasm/costmodel-<name>.wasm
#   models/aggregators/<name> -> models/wasm/aggregator-<name>.wasm
# as Go reactors (GOOS=wasip1, -buildmode=c-shared). go build leaves
# up-to-date outputs alone, so a second run takes well under a second per
# module; the first one compiles the wasip1 standard library (~20 s).
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
out=models/wasm
mkdir -p "$out"

build() { # output package
	if ! GOOS=wasip1 GOARCH=wasm "$GO" build -buildmode=c-shared -trimpath -o "$1" "$2"; then
		echo "build-models: building $2 failed" >&2
		exit 1
	fi
}

n=0
for dir in models/layers/*/; do
	name=$(basename "$dir")
	build "$out/$name.wasm" "./$dir"
	n=$((n + 1))
done
for dir in models/aggregators/*/; do
	name=$(basename "$dir")
	build "$out/aggregator-$name.wasm" "./$dir"
	n=$((n + 1))
done
for dir in models/costmodels/*/; do
	name=$(basename "$dir")
	build "$out/costmodel-$name.wasm" "./$dir"
	n=$((n + 1))
done
echo "build-models: $n modules in $out/"
