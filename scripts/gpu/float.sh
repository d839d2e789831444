#!/usr/bin/env bash
# float.sh: make test-float on the GPU machine's host CPU (issue 29): the
# float-sensitive suites (the cpu backend, the conformance suite, the
# engine, the strategies' equivalence tests) under every OpenBLAS kernel
# family that CPU runs, AVX-512 ones included (SkylakeX with avx512f,
# Cooperlake with avx512_bf16), then with strata's kernels forced to AVX2
# (STRATA_CPU_ISA=avx2), and the cuda conformance suite on the GPU under
# each family (its reference is the cpu backend). scripts/gpu/bundle.sh
# puts it and the test binaries (extra/*.test.xz) in build/gpu; from the
# repository root, with the device tool:
#
#   run  command="bash build/gpu/float.sh"  carry=["build/gpu"]  timeout_s=540
#
# Everything is logged to $OUT/float.log. Settings: OUT (./out),
# DEADLINE (480: seconds after the start, later steps are skipped).
set -u
ROOT=$(pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$ROOT/out}
DEADLINE=${DEADLINE:-480}
mkdir -p "$OUT"
exec > >(tee "$OUT/float.log") 2>&1
eval "$(WORK=/tmp/strata-gpu-float bash "$HERE/run-gpu.sh" env)" || { echo "float.sh: run-gpu.sh env failed"; exit 1; }
export LD_LIBRARY_PATH
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x$(nproc)"
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { case "$flags" in *" $1 "*) return 0 ;; esac; return 1; }
# The AVX-512 families first: CI's machines may lack them.
families=()
has avx512f && families+=(SkylakeX)
has avx512_bf16 && families+=(Cooperlake)
families+=(Haswell Sandybridge)
echo "families: default ${families[*]}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=/tmp/strata-float-tests
mkdir -p "$T"
for x in "$HERE"/extra/*.xz; do xz -dc "$x" >"$T/$(basename "$x" .xz)"; done
chmod +x "$T"/*
status=0
failed=()
skipped=()
# run NAME DIR LIMIT CMD...: CMD in DIR within min(LIMIT, time left).
run() {
	local name=$1 d=$2 l=$3 left=$((DEADLINE - SECONDS - 10)) rc
	shift 3
	if [ "$left" -lt 15 ]; then
		echo "SKIPPED (out of time): $name"
		skipped+=("$name")
		return
	fi
	[ "$l" -gt "$left" ] && l=$left
	(cd "$d" && timeout "$l" "$@") >"$T/log" 2>&1
	rc=$?
	grep -E "^(--- FAIL|    --- FAIL|FAIL|ok|PASS)|panic|kernels" "$T/log" | head -20
	if [ "$rc" -ne 0 ]; then
		status=1
		failed+=("$name (exit $rc)")
		tail -n 30 "$T/log"
	fi
}
suites() { # label
	run "$1 cpu" core/backend/cpu 120 "$T/cpu.test" -test.short -test.count=1
	run "$1 backendtest" core/backend/backendtest 120 "$T/backendtest.test" -test.short -test.count=1
	run "$1 engine" core/engine 120 "$T/engine.test" -test.short -test.count=1
	run "$1 strategy" plugins/strategy/strategytests 180 "$T/strategy.test" -test.short -test.count=1 -test.run 'Match|Equal|DataParallel'
	for p in chunked hybrid minibatch dist; do
		run "$1 strategy $p" plugins/strategy/$p 60 "$T/strategy-$p.test" -test.short -test.count=1 -test.run 'Match|Equal|DataParallel'
	done
	[ -x "${CUDA_TEST:-}" ] && run "$1 cuda conformance" cuda 120 "$CUDA_TEST" -test.count=1 -test.run 'TestConformance|TestHeadDotBackwardNil|TestDropoutGEMMKeyedBlocks'
}
for f in "" "${families[@]}"; do
	echo "== OPENBLAS_CORETYPE=${f:-<unset>} ($SECONDS s)"
	if [ -n "$f" ]; then export OPENBLAS_CORETYPE=$f; else unset OPENBLAS_CORETYPE; fi
	run "$f core type" core/backend/cpu 60 "$T/cpu.test" -test.count=1 -test.v -test.run TestBLASCoreType
	suites "${f:-default}"
done
unset OPENBLAS_CORETYPE
echo "== STRATA_CPU_ISA=avx2 ($SECONDS s)"
export STRATA_CPU_ISA=avx2
suites avx2
echo "== done ($SECONDS s): ${#failed[@]} failed${failed:+: ${failed[*]}}; ${#skipped[@]} skipped for time${skipped:+: ${skipped[*]}}"
exit $status
