#!/usr/bin/env bash
# test-float.sh (make test-float): the float-sensitive tests under several
# kernel families, so that a tolerance tuned to one CPU fails here and not
# on a user's machine (issue 29, docs/cli.md "Environment"):
#
#   - each OpenBLAS kernel family this CPU can run, picked with
#     OPENBLAS_CORETYPE (Debian's libopenblas is a DYNAMIC_ARCH build):
#     Haswell (AVX2, FMA) and Sandybridge (AVX, no FMA) everywhere they
#     run, SkylakeX (AVX-512) where /proc/cpuinfo has avx512f, Cooperlake
#     where it also has avx512_bf16. A family the CPU lacks would die with
#     SIGILL, and an unknown name falls back to another family silently:
#     the cpu package's TestBLASCoreType fails unless the family took
#     effect;
#   - strata's own kernels forced to AVX2 (STRATA_CPU_ISA=avx2), OpenBLAS
#     picking its family as usual.
#
# The suites, with -short and -count=1 (the test cache does not see a
# library's environment): the cpu backend's tests, the backend conformance
# suite (cpu, simulated device, a reordered backend), the cuda backend's
# conformance against the CPU mock (when CUDA_MOCK is set, as make passes
# it), the engine, and the strategy equivalence tests of plugins/strategy/...
# (by the project's naming: Match, Equal; and data-parallel training).
#
# Settings (environment): GO (go); CUDA_HDR and CUDA_MOCK, the headers and
# the mock of make cuda-mock; FLOAT_FAMILIES, a space-separated list of
# OpenBLAS families instead of the CPU's.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

# families prints the OpenBLAS families this CPU can run.
families() {
	if [ -n "${FLOAT_FAMILIES:-}" ]; then
		echo "$FLOAT_FAMILIES"
		return
	fi
	local flags out=""
	flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
	case "$flags" in *" avx2 "*) case "$flags" in *" fma "*) out+=" Haswell" ;; esac ;; esac
	case "$flags" in *" avx "*) out+=" Sandybridge" ;; esac
	case "$flags" in *" avx512f "*) out+=" SkylakeX" ;; esac
	case "$flags" in *" avx512_bf16 "*) out+=" Cooperlake" ;; esac
	echo "${out:- Prescott}"
}

# gotest runs one go test command with the environment of the current
# configuration (cfg), recording a failure instead of stopping, so that
# one run shows every configuration's failures.
gotest() {
	if ! env $cfg "$@"; then
		failed+=("$cfg: ${*: -1}")
	fi
}

# suites runs every suite in the current configuration.
suites() {
	local t
	t=$(date +%s)
	gotest "$GO" test -short -count=1 ./core/backend/cpu
	gotest "$GO" test -short -count=1 ./core/backend/backendtest/... ./core/engine
	if [ -n "${CUDA_MOCK:-}" ]; then
		gotest CGO_ENABLED=1 CGO_CFLAGS="-I$CUDA_HDR" CGO_LDFLAGS="-L$CUDA_MOCK" LD_LIBRARY_PATH="$CUDA_MOCK" \
			"$GO" test -short -count=1 -tags cuda -run 'TestConformance' ./cuda/
	fi
	gotest "$GO" test -short -count=1 -run 'Match|Equal|DataParallel' ./plugins/strategy/...
	echo "== test-float: $cfg done in $(($(date +%s) - t)) s"
}

start=$(date +%s)
ran=()
failed=()
for f in $(families); do
	cfg="OPENBLAS_CORETYPE=$f"
	echo "== test-float: OpenBLAS kernels $f ($cfg)"
	suites
	ran+=("$cfg")
done
cfg="STRATA_CPU_ISA=avx2"
echo "== test-float: strata's kernels on AVX2 ($cfg)"
suites
ran+=("$cfg")
echo "== test-float: ran ${ran[*]} in $(($(date +%s) - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
	printf '== test-float: FAILED %s\n' "${failed[@]}" >&2
	exit 1
fi
