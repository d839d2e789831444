#!/usr/bin/env bash
# Builds the WebAssembly guest modules that the strata binary embeds:
#   models/layers/<name>     -> models/wasm/<name>.wasm
#   models/costmodels/<name> -> models/wasm/costmodel-<name>.wasm
#   models/aggregators/<name> -> models/wasm/aggregator-<name>.wasm
#   models/decoders/<name>   -> models/wasm/decoder-<name>.wasm
# as Go reactors (GOOS=wasip1, -buildmode=c-shared). Every directive line
# `//strata:<key> <value>` of a module's sources becomes a custom section
# "strata.<key>" of its .wasm holding <value>, "true" for a bare
# `//strata:<key>` (its one-line doc,
# `//strata:doc ...`, is what list-plugins shows). go build leaves
# up-to-date outputs (in models/wasm/.build, which go:embed skips) alone,
# so a second run takes well under a second per module; the first one
# compiles the wasip1 standard library (~20 s).
#
# scripts/build-models.sh SRC OUT builds the one module in SRC to OUT (the
# tests build their fixture modules with it).
set -euo pipefail
GO="${GO:-go}"

# uleb prints v as unsigned LEB128 bytes.
uleb() {
	local v=$1 b
	while :; do
		b=$((v & 0x7f))
		v=$((v >> 7))
		((v)) && b=$((b | 0x80))
		printf "\\$(printf %03o "$b")"
		((v)) || break
	done
}

# sections prints a custom section for every //strata: directive in dir.
sections() {
	local line key val name
	grep -h '^//strata:[a-z-]*' "$1"/*.go | sort -u | while IFS= read -r line; do
		line=${line#//strata:}
		key=${line%% *}
		val=true # a bare flag (wazero refuses an empty custom section)
		[[ $line == *" "* ]] && val=${line#* }
		name="strata.$key"
		printf '\0'
		uleb $((${#name} + 1 + $(printf %s "$val" | wc -c)))
		uleb ${#name}
		printf %s "$name" "$val"
	done
}

build() { # output package-dir
	local tmp
	tmp="$(dirname "$1")/.build/$(basename "$1")"
	mkdir -p "$(dirname "$tmp")"
	if ! GOOS=wasip1 GOARCH=wasm "$GO" build -buildmode=c-shared -trimpath -o "$tmp" "$2"; then
		echo "build-models: building $2 failed" >&2
		exit 1
	fi
	{ cat "$tmp"; sections "$2"; } >"$1.new"
	if cmp -s "$1.new" "$1"; then rm "$1.new"; else mv "$1.new" "$1"; fi
}

if (($# == 2)); then
	build "$2" "$1"
	exit 0
fi
cd "$(dirname "$0")/.."
out=models/wasm
mkdir -p "$out"
n=0
# Each kind: its source directory under models/ and its files' prefix.
for kind in layers: aggregators:aggregator- costmodels:costmodel- decoders:decoder-; do
	for dir in "models/${kind%%:*}"/*/; do
		build "$out/${kind#*:}$(basename "$dir").wasm" "./$dir"
		n=$((n + 1))
	done
done
echo "build-models: $n modules in $out/"
