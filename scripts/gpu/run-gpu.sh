#!/usr/bin/env bash
# run-gpu.sh: run strata's CUDA bundle (scripts/gpu/bundle.sh -> build/gpu/)
# on the GPU machine, which has the NVIDIA driver, the CUDA 13 libraries and
# PyTorch + PyG in a venv, but no Go. From the repository root:
#
#   bash build/gpu/run-gpu.sh [PHASE...]
#
# Phases, in this order (default: all four):
#   check    machine, driver, glibc, device; symcheck.py: every symbol the
#            binaries import resolves in the libraries found here
#   test     cuda.test -test.v (op conformance against the CPU backend,
#            Cora accuracy)                                -> $OUT/cuda-test.log
#   bench    cuda.test -test.bench 'SpMM|Copy|GEMM' (SpMM bandwidth against
#            the device-to-device copy's; cuBLAS GFLOP/s)  -> $OUT/bench.txt
#   compare  per R-MAT scale: `strata convert` the graph once to a .strata
#            file, then for each model strata train (train.backend = cuda)
#            and pyg_bench.py (PyG) on that file    -> $OUT/compare.jsonl,
#            $OUT/compare.csv, $OUT/compare.md (rewritten after each graph)
#   env      (alone) print the exports that run the unpacked binaries by hand:
#            eval "$(bash build/gpu/run-gpu.sh env)"; "$STRATA" version
#
# Everything is also logged to $OUT/run-gpu.log. A failed step is recorded
# and the next one runs; the exit code is 1 if any step failed.
#
# Settings (environment):
#   OUT=./out  WORK=/tmp/strata-gpu (unpacked binaries, .strata graphs)
#   SCALES="20 22"  MODELS="gcn sage gat"  RMAT=rmat-%s-16-128-16-0
#   EPOCHS=      (empty: the configs' 12) same for both sides
#   SETS=        extra "key=value ..." overrides for both sides
#   PYG_LAYOUTS="edge_index csr"  (csr: torch.sparse adj_t, gcn and sage)
#   BACKEND=cuda DEVICE=cuda   (cpu/cpu with STRATA=bin/strata: a local
#                               dry run of the compare phase)
#   TEST_RUN=.  TEST_TIMEOUT=240  BENCH='SpMM|Copy|GEMM'  BENCHTIME=20x
#   RUN_TIMEOUT=240 (one strata run)  PYG_TIMEOUT=420 (PyG, one graph)
#   DEADLINE=560  seconds after the start, later steps are skipped (a device
#                 call is killed at 600 s; what is under $OUT comes back)
#   PYTHON=  (default: /opt/torch/.venv/bin/python3, else a python3 with torch)
#   CUDA_LIB_DIR=  directory of libcublas.so.13 (default: searched)
#   STRATA=, CUDA_TEST=  binaries (default: from the bundle)
#   BIND_NOW=1  bind every symbol at start-up (LD_BIND_NOW)
# shellcheck disable=SC2317 # the phase_* functions are called as "phase_$p"
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(pwd)
OUT=${OUT:-$ROOT/out}
WORK=${WORK:-/tmp/strata-gpu}
SCALES=${SCALES:-20 22}
MODELS=${MODELS:-gcn sage gat}
RMAT=${RMAT:-rmat-%s-16-128-16-0}
EPOCHS=${EPOCHS:-}
SETS=${SETS:-}
PYG_LAYOUTS=${PYG_LAYOUTS:-edge_index csr}
BACKEND=${BACKEND:-cuda}
DEVICE=${DEVICE:-cuda}
TEST_RUN=${TEST_RUN:-.}
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
BENCH=${BENCH:-SpMM|Copy|GEMM}
BENCHTIME=${BENCHTIME:-20x}
RUN_TIMEOUT=${RUN_TIMEOUT:-240}
PYG_TIMEOUT=${PYG_TIMEOUT:-420}
DEADLINE=${DEADLINE:-560}

phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(check test bench compare)
for p in "${phases[@]}"; do
	case $p in
	check | test | bench | compare | env) ;;
	*)
		echo "run-gpu.sh: unknown phase '$p' (check, test, bench, compare, env)" >&2
		exit 2
		;;
	esac
done

say() { echo "== $*"; }
warn() { echo "run-gpu.sh: $*" >&2; }

# --- locate Python, the CUDA 13 libraries, the driver, the binaries --------

find_python() {
	local p
	for p in "${PYTHON:-}" /opt/torch/.venv/bin/python3 /opt/torch/.venv/bin/python; do
		[ -n "$p" ] && [ -x "$p" ] && {
			echo "$p"
			return
		}
	done
	for p in /opt/*/.venv/bin/python3 /opt/*/venv/bin/python3 "$(command -v python3 2>/dev/null)"; do
		[ -x "$p" ] && "$p" -c 'import torch' 2>/dev/null && {
			echo "$p"
			return
		}
	done
	command -v python3 2>/dev/null
}

find_cuda_lib() {
	local d f
	if [ -n "${CUDA_LIB_DIR:-}" ]; then
		echo "$CUDA_LIB_DIR"
		return
	fi
	for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13*/lib64 \
		/opt/torch/.venv/lib/python3*/site-packages/nvidia/cu13/lib \
		/opt/torch/.venv/lib/python3*/site-packages/nvidia/cublas/lib; do
		[ -e "$d/libcublas.so.13" ] && {
			echo "$d"
			return
		}
	done
	f=$(find /usr/local /opt /usr/lib -name 'libcublas.so.13*' 2>/dev/null | head -n1)
	[ -n "$f" ] && dirname "$f"
}

# Where libcuda.so.1 is: "cache" when the loader cache knows it, else its
# directory (added to the binaries' library path), else nothing.
find_driver() {
	local d ldc
	ldc=$(command -v ldconfig || echo /sbin/ldconfig)
	if "$ldc" -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
		echo cache
		return
	fi
	for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib/wsl/lib; do
		[ -e "$d/libcuda.so.1" ] && {
			echo "$d"
			return
		}
	done
}

PY=$(find_python)
CUDA_LIB=$(find_cuda_lib)
DRIVER=$(find_driver)
DRIVER_DIR=
[ "$DRIVER" = cache ] || DRIVER_DIR=$DRIVER

# Unpack the bundle's binaries (bin.tar.xz: strata, cuda.test, lib/) into
# $WORK/bin once per bundle.
# (Run from scripts/gpu, it takes the binaries of build/gpu.)
BUNDLE=$HERE
[ -f "$BUNDLE/bin.tar.xz" ] || [ -f "$BUNDLE/strata" ] || BUNDLE=$ROOT/build/gpu
BIN_DIR=$BUNDLE
if [ -f "$BUNDLE/bin.tar.xz" ]; then
	BIN_DIR=$WORK/bin
	stamp=$(cksum <"$BUNDLE/bin.tar.xz")
	if [ ! -f "$BIN_DIR/.stamp" ] || [ "$(cat "$BIN_DIR/.stamp")" != "$stamp" ]; then
		rm -rf "$BIN_DIR" && mkdir -p "$BIN_DIR" || exit 1
		if [ -n "$PY" ]; then
			"$PY" -c '
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    if hasattr(tarfile, "data_filter"):
        t.extractall(sys.argv[2], filter="data")
    else:
        t.extractall(sys.argv[2])
 ' "$BUNDLE/bin.tar.xz" "$BIN_DIR" || exit 1
		else
			tar -xJf "$BUNDLE/bin.tar.xz" -C "$BIN_DIR" || exit 1
		fi
		echo "$stamp" >"$BIN_DIR/.stamp"
	fi
fi
STRATA=${STRATA:-$BIN_DIR/strata}
CUDA_TEST=${CUDA_TEST:-$BIN_DIR/cuda.test}
case $STRATA in /*) ;; *) STRATA=$ROOT/$STRATA ;; esac
case $CUDA_TEST in /*) ;; *) CUDA_TEST=$ROOT/$CUDA_TEST ;; esac
CONFIG_DIR=$HERE/configs
[ -d "$CONFIG_DIR" ] || CONFIG_DIR=$ROOT/configs/gpu

# Only the bundle's binaries run with this library path (the CUDA 13
# libraries, the driver if needed, the bundled libopenblas/libmetis...):
# PyTorch keeps its own.
BIN_LD=
for d in "$CUDA_LIB" "$DRIVER_DIR" "$BIN_DIR/lib" "${LD_LIBRARY_PATH:-}"; do
	[ -n "$d" ] && BIN_LD=${BIN_LD:+$BIN_LD:}$d
done
# The environment prefix of every binary run (timeout cannot run a function).
BINENV=(env "LD_LIBRARY_PATH=$BIN_LD")
[ "${BIND_NOW:-0}" = 1 ] && BINENV+=(LD_BIND_NOW=1)

if [ "${phases[0]}" = env ]; then
	printf 'export STRATA=%q CUDA_TEST=%q LD_LIBRARY_PATH=%q PYTHON=%q\n' "$STRATA" "$CUDA_TEST" "$BIN_LD" "$PY"
	exit 0
fi

mkdir -p "$OUT" "$WORK/data" || exit 1
exec > >(tee -a "$OUT/run-gpu.log") 2>&1
TEE_PID=$!

# Seconds left before DEADLINE (bash's SECONDS counts from the start).
left() { echo $((DEADLINE - SECONDS)); }
# tmo LIMIT CMD...: run with a time limit of min(LIMIT, time left - 10 s).
tmo() {
	local lim=$1 l
	shift
	l=$(($(left) - 10))
	[ "$l" -lt "$lim" ] && lim=$l
	if [ "$lim" -lt 5 ]; then
		warn "skipped: out of time (DEADLINE=$DEADLINE s)"
		return 124
	fi
	if command -v timeout >/dev/null; then
		timeout -k 10 "$lim" "$@"
	else
		"$@"
	fi
}

status=0
declare -a summary=()
record() { # name rc
	summary+=("$1: $([ "$2" -eq 0 ] && echo ok || echo "FAILED (exit $2)")")
	[ "$2" -eq 0 ] || status=1
}

# --- check -------------------------------------------------------------------

phase_check() {
	say "machine"
	date -u +%Y-%m-%dT%H:%M:%SZ
	uname -a
	echo "cpus $(nproc 2>/dev/null); $(grep -m1 MemTotal /proc/meminfo 2>/dev/null)"
	echo "glibc $(getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>/dev/null | head -n1)"
	say "nvidia-smi"
	if command -v nvidia-smi >/dev/null; then
		nvidia-smi
		nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
	else
		warn "nvidia-smi not found"
	fi
	say "libraries"
	echo "CUDA 13 libraries: ${CUDA_LIB:-NOT FOUND (set CUDA_LIB_DIR)}"
	[ -n "$CUDA_LIB" ] && ls -l "$CUDA_LIB"/libcublas.so* "$CUDA_LIB"/libcublasLt.so* 2>/dev/null
	case $DRIVER in
	cache) echo "driver library libcuda.so.1: in the loader cache" ;;
	"") echo "driver library libcuda.so.1: not found in the loader cache nor the usual directories" ;;
	*) echo "driver library libcuda.so.1: $DRIVER_DIR" ;;
	esac
	echo "binaries: $STRATA $CUDA_TEST (library path $BIN_LD)"
	[ -f "$BUNDLE/MANIFEST.txt" ] && cat "$BUNDLE/MANIFEST.txt"
	say "python"
	echo "python: ${PY:-NOT FOUND}"
	[ -n "$PY" ] && "$PY" -c '
import sys
print("python", sys.version.split()[0])
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        print("device", p.name, "cc %d.%d" % (p.major, p.minor), "SMs", p.multi_processor_count,
              "memory %.1f GiB" % (p.total_memory / 2**30))
    import torch_geometric
    print("torch_geometric", torch_geometric.__version__)
except Exception as e:
    print("python check:", type(e).__name__, e)
'
	say "symcheck"
	local bins=() b rc
	for b in "$STRATA" "$CUDA_TEST"; do
		[ -f "$b" ] && bins+=("$b")
	done
	if [ ${#bins[@]} -eq 0 ]; then
		warn "no binaries found (run scripts/gpu/bundle.sh here first, carry build/gpu)"
		return 1
	fi
	if [ -z "$PY" ]; then
		warn "no python: symcheck skipped"
		return 1
	fi
	env LD_LIBRARY_PATH="$BIN_LD" "$PY" "$HERE/symcheck.py" --json "$OUT/symcheck.json" "${bins[@]}"
	rc=$?
	if command -v ldd >/dev/null; then
		for b in "${bins[@]}"; do
			echo "ldd $b:"
			env LD_LIBRARY_PATH="$BIN_LD" ldd "$b" 2>&1 | sed 's/^/  /'
		done
	fi
	return "$rc"
}

# --- test / bench -------------------------------------------------------------

# The package directory, where `go test` would run the tests (testdata/).
pkgdir() { if [ -d "$ROOT/cuda" ]; then echo "$ROOT/cuda"; else echo "$ROOT"; fi; }

phase_test() {
	[ -x "$CUDA_TEST" ] || {
		warn "no test binary $CUDA_TEST"
		return 1
	}
	say "cuda.test -test.v -test.run $TEST_RUN (in $(pkgdir))"
	(cd "$(pkgdir)" && tmo "$TEST_TIMEOUT" "${BINENV[@]}" "$CUDA_TEST" -test.v -test.count 1 -test.run "$TEST_RUN" -test.timeout "${TEST_TIMEOUT}s") 2>&1 |
		tee "$OUT/cuda-test.log"
	return "${PIPESTATUS[0]}"
}

phase_bench() {
	[ -x "$CUDA_TEST" ] || {
		warn "no test binary $CUDA_TEST"
		return 1
	}
	say "cuda.test -test.bench '$BENCH' -test.benchtime $BENCHTIME"
	(cd "$(pkgdir)" && tmo "$TEST_TIMEOUT" "${BINENV[@]}" "$CUDA_TEST" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME" -test.timeout "${TEST_TIMEOUT}s") 2>&1 |
		tee "$OUT/bench.txt"
	return "${PIPESTATUS[0]}"
}

# --- compare ------------------------------------------------------------------

report() {
	local args=(report --jsonl "$OUT/compare.jsonl" --csv "$OUT/compare.csv" --md "$OUT/compare.md")
	[ -s "$OUT/bench.txt" ] && args+=(--bench "$OUT/bench.txt")
	[ -f "$OUT/compare.jsonl" ] || : >"$OUT/compare.jsonl"
	"$PY" "$HERE/compare.py" "${args[@]}"
}

phase_compare() {
	local rc=0 scale spec file model cfg r t0 sets=() layouts=() cfgs=() s tmp
	[ -n "$PY" ] || {
		warn "no python"
		return 1
	}
	[ -x "$STRATA" ] || {
		warn "no strata binary $STRATA"
		return 1
	}
	tmp=$(mktemp -d "$WORK/run.XXXXXX") || return 1
	[ -n "$EPOCHS" ] && sets+=(--set "train.epochs=$EPOCHS")
	for s in $SETS; do sets+=(--set "$s"); done
	for s in $PYG_LAYOUTS; do layouts+=(--layout "$s"); done
	for model in $MODELS; do
		cfg=$CONFIG_DIR/$model.toml
		[ -f "$cfg" ] || {
			warn "no config $cfg"
			rc=1
			continue
		}
		cfgs+=(--config "$cfg")
	done
	for scale in $SCALES; do
		# shellcheck disable=SC2059 # RMAT is the format
		spec=$(printf "$RMAT" "$scale")
		file=$WORK/data/$spec.strata
		if [ ! -s "$file" ]; then
			say "strata convert -i $spec"
			t0=$SECONDS
			tmo "$RUN_TIMEOUT" "${BINENV[@]}" "$STRATA" convert -i "$spec" -o "$file" || {
				warn "convert $spec failed"
				rc=1
				continue
			}
			echo "(converted in $((SECONDS - t0)) s, $(du -h "$file" | cut -f1))"
		fi
		for model in $MODELS; do
			cfg=$CONFIG_DIR/$model.toml
			[ -f "$cfg" ] || continue
			say "strata train $model on $spec (train.backend=$BACKEND)"
			tmo "$RUN_TIMEOUT" "${BINENV[@]}" "$STRATA" train -c "$cfg" --set "data.dataset=$file" \
				--set "train.backend=$BACKEND" --set output.json=true --set output.progress=off \
				"${sets[@]}" >"$tmp/out" 2>"$tmp/err"
			r=$?
			sed 's/^/  strata: /' "$tmp/err"
			tail -n1 "$tmp/out"
			"$PY" "$HERE/compare.py" add-strata --jsonl "$OUT/compare.jsonl" --dataset "$spec" --model "$model" \
				--config "$cfg" --graph "$file" --stdout "$tmp/out" --stderr "$tmp/err" --rc "$r"
			[ "$r" -eq 0 ] || rc=1
		done
		if [ ${#cfgs[@]} -gt 0 ]; then
			say "PyG on $spec: $MODELS ($PYG_LAYOUTS)"
			PYTHONUNBUFFERED=1 tmo "$PYG_TIMEOUT" "$PY" "$HERE/pyg_bench.py" "${cfgs[@]}" --graph "$file" \
				"${layouts[@]}" --device "$DEVICE" "${sets[@]}" --jsonl "$OUT/compare.jsonl"
			r=$?
			[ "$r" -eq 0 ] || {
				warn "pyg_bench.py on $spec: exit $r"
				rc=1
			}
		fi
		report || rc=1
	done
	rm -rf "$tmp"
	say "compare.md"
	cat "$OUT/compare.md" 2>/dev/null
	return "$rc"
}

for p in "${phases[@]}"; do
	"phase_$p"
	record "$p" $?
done
say "summary ($SECONDS s)"
printf '  %s\n' "${summary[@]}"
echo "results in $OUT: $(cd "$OUT" && echo *)"
# Let tee write the log's last lines before the device call collects $OUT.
exec >&- 2>&-
wait "$TEE_PID" 2>/dev/null
exit $status
