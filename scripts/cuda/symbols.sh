#!/usr/bin/env bash
# Regenerates cuda/internal/mock/symbols.txt: every libcuda/libcublas symbol a
# strata binary with the cuda backend can reference. The mock libraries (which
# are also the link stubs for binaries shipped to the GPU machine) must export
# all of them.
#
# How: link a throw-away main that imports gorgonia.org/cu, gorgonia.org/cu/blas
# (and strata/cuda when it builds) against EMPTY libcuda/libcublas; the link
# fails and ld names every undefined reference. EXTRA lists symbols the
# project's own cgo may call before any code does.
#   usage: scripts/cuda/symbols.sh        (needs make cuda-headers)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$CUDA_REPO"
HDR=$CUDA_BUILD/hdr/usr/include
OUT=cuda/internal/mock/symbols.txt
EXTRA="cuMemHostAlloc cuMemHostGetDevicePointer_v2 cuMemFreeHost cuMemHostRegister_v2
cuMemHostUnregister cublasSetStream_v2 cublasGetStream_v2 cublasSgemmStridedBatched
cublasDgemmStridedBatched cublasSetPointerMode_v2 cublasGetPointerMode_v2"
[ -f "$HDR/cuda.h" ] || die "no CUDA headers in $HDR: run make cuda-headers"

T=$CUDA_BUILD/symbols.tmp
rm -rf "$T" && mkdir -p "$T/stubs"
# Inside the module so the go.mod versions apply; "_" keeps it out of ./...
P=$CUDA_REPO/build/cuda/_symprobe
rm -rf "$P" && mkdir -p "$P"
trap 'rm -rf "$T" "$P"' EXIT
for spec in cuda:libcuda.so.1 cublas:libcublas.so.13; do
	echo 'void strata_empty_stub(void) {}' | gcc -shared -fPIC -x c - -o "$T/stubs/lib${spec%%:*}.so" -Wl,-soname,"${spec#*:}"
done
imports='_ "gorgonia.org/cu"
	_ "gorgonia.org/cu/blas"'
if CGO_ENABLED=1 CGO_CFLAGS="-I$HDR" go list -tags cuda strata/cuda >/dev/null 2>&1; then
	imports="$imports
	_ \"strata/cuda\""
fi
cat > "$P/main.go" <<GO
//go:build cuda

package main

import (
	$imports
)

func main() {}
GO
if CGO_ENABLED=1 CGO_CFLAGS="-I$HDR" CGO_LDFLAGS="-L$T/stubs" \
	go build -tags cuda -o "$T/probe" ./build/cuda/_symprobe >"$T/link.log" 2>&1; then
	die "the probe linked against empty stubs; cannot list symbols"
fi
grep -oE "undefined reference to \`[A-Za-z0-9_]+'" "$T/link.log" | sed -E "s/.*\`(.*)'/\1/" | sort -u >"$T/referenced"
[ -s "$T/referenced" ] || { cat "$T/link.log" >&2; die "no undefined references found in the link log"; }
if grep -vE '^cu(blas)?[A-Z]' "$T/referenced" >&2; then
	die "references above are neither cu* nor cublas*"
fi
mkdir -p "$(dirname "$OUT")"
{ cat "$T/referenced"; printf '%s\n' $EXTRA; } | LC_ALL=C sort -u >"$OUT"
log "$OUT: $(grep -c '^cu[A-Z]' "$OUT") libcuda + $(grep -c '^cublas' "$OUT") libcublas symbols" \
	"($(wc -l <"$T/referenced") referenced by $(sed -n 's/^\t_ "\(.*\)"$/\1/p' "$P/main.go" | paste -sd' '))"
