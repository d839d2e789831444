#!/usr/bin/env bash
# bundle.sh: build what the GPU machine runs (it has the NVIDIA driver, the
# CUDA 13 libraries, PyTorch + PyG, and no Go) into build/gpu/:
#
#   bin.tar.xz     strata     go build -tags cuda ./cmd/strata (WASM models embedded)
#                  cuda.test  go test -c -tags cuda ./cuda (conformance vs the CPU
#                             backend, Cora accuracy, SpMM/copy benchmarks)
#                  lib/       the shared libraries they need that a CUDA machine
#                             lacks (libopenblas, libmetis, libgfortran, ...);
#                             never libcuda/libcublas, which come from the machine
#   run-gpu.sh pyg_bench.py symcheck.py compare.py configs/*.toml MANIFEST.txt
#
# The binaries are compressed because a device call carries at most 64 MiB of
# working tree: stripped, strata is ~31 MB and libopenblas ~36 MB, xz'd about
# a quarter of that. run-gpu.sh unpacks them on the GPU machine.
#
# Prerequisites (`make cuda-check` sets them up): the CUDA headers in
# build/cuda/hdr/usr/include and the link stubs (SONAME libcuda.so.1 /
# libcublas.so.13, unversioned symbols) in build/cuda/mock. The binaries are
# linked with CGO_CFLAGS=-I<headers> CGO_LDFLAGS=-L<stubs>.
#
# Then, with the device tool:  run  command="bash build/gpu/run-gpu.sh"
#                                   carry=["build/gpu"]  timeout_s=600
#
# Settings (environment): GO (go), CUDA_HDR and CUDA_STUBS (or the
# Makefile's CUDA_MOCK): the two directories above; GPU_BUNDLE_DIR
# (build/gpu; the unpacked build goes to <dir>-stage); for testing this
# script on another package, GPU_TAGS (cuda) and GPU_TEST_PKG (./cuda).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
GO=${GO:-go}
OUTDIR=${GPU_BUNDLE_DIR:-build/gpu}
STAGE=$OUTDIR-stage
HDR=${CUDA_HDR:-$ROOT/build/cuda/hdr/usr/include}
STUBS=${CUDA_STUBS:-${CUDA_MOCK:-$ROOT/build/cuda/mock}}
TAGS=${GPU_TAGS-cuda}
TEST_PKG=${GPU_TEST_PKG:-./cuda}

die() {
	echo "bundle: $*" >&2
	exit 1
}

command -v "$GO" >/dev/null || die "Go ($GO) is not on PATH"
command -v xz >/dev/null || die "xz is needed (apt-get install xz-utils)"
[ -f "$HDR/cuda.h" ] || die "no CUDA headers at $HDR/cuda.h: run \`make cuda-check\` first (or set CUDA_HDR)"
[ -e "$STUBS/libcuda.so.1" ] || [ -e "$STUBS/libcuda.so" ] ||
	die "no libcuda link stub in $STUBS: run \`make cuda-check\` first (or set CUDA_STUBS)"
[ -d "$TEST_PKG" ] || die "package $TEST_PKG does not exist yet: the CUDA backend must be written before it can be bundled"

rm -rf "$OUTDIR" "$STAGE"
mkdir -p "$OUTDIR/configs" "$STAGE/lib" "$STAGE/link"
LINK=$(cd "$STAGE/link" && pwd)
LIBS=$(cd "$STAGE/lib" && pwd)

# -lcuda / -lcublas need the unversioned names; link them to the stubs'
# versioned files where the stub directory has only those.
for f in "$STUBS"/lib*.so.*; do
	[ -e "$f" ] || continue
	base=$(basename "$f")
	dev=${base%%.so.*}.so
	[ -e "$STUBS/$dev" ] || [ -e "$LINK/$dev" ] || ln -s "$f" "$LINK/$dev"
done

echo "bundle: building the WASM layer modules (embedded in strata)"
scripts/build-models.sh

export CGO_ENABLED=1
case " ${CGO_CFLAGS:-} " in
*" -I$HDR "*) ;;
*) export CGO_CFLAGS="-I$HDR${CGO_CFLAGS:+ $CGO_CFLAGS}" ;;
esac
case " ${CGO_LDFLAGS:-} " in
*" -L$STUBS "*) export CGO_LDFLAGS="$CGO_LDFLAGS -L$LINK" ;;
*) export CGO_LDFLAGS="-L$STUBS -L$LINK${CGO_LDFLAGS:+ $CGO_LDFLAGS}" ;;
esac
flags=(-trimpath -ldflags=-s\ -w)
[ -n "$TAGS" ] && flags+=(-tags "$TAGS")

echo "bundle: go build ${flags[*]} ./cmd/strata"
"$GO" build "${flags[@]}" -o "$STAGE/strata" ./cmd/strata ||
	die "strata does not build with -tags '$TAGS' (errors above): fix the cuda package first"
echo "bundle: go test -c ${flags[*]} $TEST_PKG"
"$GO" test -c "${flags[@]}" -o "$STAGE/cuda.test" "$TEST_PKG" ||
	die "the tests of $TEST_PKG do not build with -tags '$TAGS' (errors above)"
[ -f "$STAGE/cuda.test" ] || die "$TEST_PKG has no tests: go test -c wrote no binary"

needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
if [ -n "$TAGS" ] && ! needed "$STAGE/strata" | grep -q '^libcuda\.so'; then
	echo "bundle: WARNING: strata does not link libcuda: is train.backend = \"cuda\" wired into cmd/strata?" >&2
fi

# Bundle every shared library the binaries load except the C library's own,
# libgcc_s (on every Linux) and the CUDA ones (from the driver and the CUDA
# 13 installation on the GPU machine; here only link stubs).
system='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libutil|libresolv|libgcc_s)\.so'
cudalibs='^(libcuda|libcublas|libcublasLt|libnvrtc|libcusparse|libcudart|libnvidia-[a-z-]+|libnvJitLink)\.so'
for b in "$STAGE/strata" "$STAGE/cuda.test"; do
	LD_LIBRARY_PATH="$STUBS:$LINK${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$b" |
		awk '$2 == "=>" { print $1, $3 }'
done | sort -u | while read -r name path; do
	if [[ $name =~ $system || $name =~ $cudalibs ]]; then
		continue
	fi
	[ -f "$path" ] || die "$name is not found here (ldd: $path); install it first"
	cp -L "$path" "$LIBS/$name"
done

# The float-sensitive suites (float.sh: make test-float's packages), built
# to run on the GPU machine's host CPU under its OpenBLAS families, AVX-512
# ones among them where the CPU has them. They run from the repository
# root (their testdata), with the bundle's libraries. FLOAT_TESTS=0 skips
# them (about 10 MB compressed).
if [ "${FLOAT_TESTS:-1}" = 1 ] && [ -z "${GPU_TEST_PKG+x}" ]; then
	mkdir -p "$OUTDIR/extra"
	for pt in cpu:./core/backend/cpu backendtest:./core/backend/backendtest engine:./core/engine \
		strategy:./plugins/strategy/strategytests strategy-chunked:./plugins/strategy/chunked strategy-hybrid:./plugins/strategy/hybrid \
		strategy-minibatch:./plugins/strategy/minibatch strategy-dist:./plugins/strategy/dist; do
		echo "bundle: go test -c ${flags[*]} ${pt#*:}"
		"$GO" test -c -trimpath -ldflags=-s\ -w -o "$STAGE/${pt%%:*}.test" "${pt#*:}" ||
			die "the tests of ${pt#*:} do not build"
		xz -T0 -6 -c "$STAGE/${pt%%:*}.test" >"$OUTDIR/extra/${pt%%:*}.test.xz"
	done
	cp scripts/gpu/float.sh "$OUTDIR/"
fi

echo "bundle: compressing"
tar -C "$STAGE" --owner=0 --group=0 --numeric-owner --sort=name -cf - strata cuda.test lib |
	xz -T0 -6 >"$OUTDIR/bin.tar.xz"
cp scripts/gpu/run-gpu.sh scripts/gpu/pyg_bench.py scripts/gpu/symcheck.py scripts/gpu/compare.py "$OUTDIR/"
cp configs/gpu/*.toml "$OUTDIR/configs/"
chmod +x "$OUTDIR"/*.sh "$OUTDIR"/*.py

{
	echo "strata GPU bundle, built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
	echo "$("$GO" version); tags '$TAGS'; CGO_CFLAGS=$CGO_CFLAGS; CGO_LDFLAGS=$CGO_LDFLAGS"
	echo "build glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null)"
	for b in strata cuda.test; do
		echo "$b: $(stat -c %s "$STAGE/$b") bytes, sha256 $(sha256sum "$STAGE/$b" | cut -d' ' -f1)"
		echo "  NEEDED: $(needed "$STAGE/$b" | tr '\n' ' ')"
		echo "  newest glibc symbol version: $(readelf -V "$STAGE/$b" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n1)"
	done
	echo "bundled libraries:"
	for f in "$STAGE"/lib/*; do
		[ -e "$f" ] && echo "  $(basename "$f"): $(stat -c %s "$f") bytes"
	done
} >"$OUTDIR/MANIFEST.txt"
cat "$OUTDIR/MANIFEST.txt"

# Every symbol imported must resolve against the stubs and bundled libraries
# (the same check run-gpu.sh runs against the real CUDA libraries).
if command -v python3 >/dev/null; then
	LD_LIBRARY_PATH="$STUBS:$LINK:$LIBS" python3 scripts/gpu/symcheck.py \
		"$STAGE/strata" "$STAGE/cuda.test" >"$STAGE/symcheck.txt" 2>&1 ||
		echo "bundle: WARNING: symcheck against the link stubs failed, see $STAGE/symcheck.txt" >&2
	tail -n1 "$STAGE/symcheck.txt"
fi

size=$(du -sb "$OUTDIR" | cut -f1)
echo "bundle: $OUTDIR is $((size / 1024 / 1024)) MiB ($size bytes; unpacked binaries in $STAGE: $(du -sh "$STAGE" | cut -f1))"
ls -l "$OUTDIR"
echo "bundle: a device call carries the working tree and build/gpu, 64 MiB in all"
