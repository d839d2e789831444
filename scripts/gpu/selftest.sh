#!/usr/bin/env bash
# selftest.sh: the checks of scripts/gpu/ that need no GPU, run from any
# directory (needs bin/strata: `make build`, or STRATA=...):
#
#   - bash -n and shellcheck (when installed) of the shell scripts,
#     py_compile of the Python ones;
#   - pyg_bench.py's reader of strata's binary graph format against
#     `strata inspect` on files written by `strata convert`, and its copy
#     of strata's symmetrisation against `strata hitratio` (which prints the
#     symmetrised edge count);
#   - symcheck.py on bin/strata, and on a gcc-built binary whose "real"
#     libcuda lacks a symbol (it must name it and fail);
#   - compare.py on made-up results and benchmark lines;
#   - pyg_bench.py end to end on the CPU with a stand-in for PyG
#     (testdata/fake_pyg: PyG's layer signatures and parameter shapes in
#     plain torch), its parameter counts against strata's for gcn/sage/gat,
#     and run-gpu.sh's compare phase with the CPU strata (BACKEND=cpu).
#     These need a python3 with numpy and torch (Debian: python3-torch).
#
# It prints "N passed, N failed" and exits 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
G=scripts/gpu
export PYTHONDONTWRITEBYTECODE=1
STRATA=${STRATA:-bin/strata}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() {
	echo "ok   $*"
	pass=$((pass + 1))
}
bad() {
	echo "FAIL $*"
	fail=$((fail + 1))
}
check() { # description command...
	local d=$1
	shift
	if "$@" >"$T/log" 2>&1; then ok "$d"; else
		bad "$d"
		sed 's/^/     /' "$T/log" | tail -n 20
	fi
}

PY=
for p in "${PYTHON:-}" /usr/bin/python3 python3; do
	[ -n "$p" ] && command -v "$p" >/dev/null && "$p" -c 'import numpy, tomllib' 2>/dev/null && {
		PY=$p
		break
	}
done
HAVE_TORCH=0
[ -n "$PY" ] && "$PY" -c 'import torch' 2>/dev/null && HAVE_TORCH=1

# --- static checks -------------------------------------------------------------
for s in "$G"/*.sh; do
	check "bash -n $s" bash -n "$s"
	if command -v shellcheck >/dev/null; then
		check "shellcheck $s" shellcheck "$s"
	fi
done
for s in "$G"/pyg_bench.py "$G"/compare.py "$G"/symcheck.py "$G"/testdata/fake_pyg/torch_geometric/*.py; do
	check "py_compile $s" python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$s"
done
for m in gcn sage gat; do
	if [ -x "$STRATA" ]; then
		check "strata validate configs/gpu/$m.toml" "$STRATA" validate -c configs/gpu/$m.toml \
			--set train.backend=cpu --set data.dataset=rmat-8-16-128-16-0
	fi
done

# --- bundle.sh fails clearly without its prerequisites ---------------------------
if CUDA_HDR=$T/none GPU_BUNDLE_DIR=$T/bundle bash $G/bundle.sh >"$T/b.log" 2>&1; then
	bad "bundle.sh without CUDA headers must fail"
elif grep -q "make cuda-check" "$T/b.log"; then
	ok "bundle.sh without CUDA headers fails and says what to run"
else
	bad "bundle.sh without CUDA headers: unclear message: $(tail -n1 "$T/b.log")"
fi

if [ ! -x "$STRATA" ] || [ -z "$PY" ]; then
	bad "the remaining checks need $STRATA (make build) and a python3 with numpy (have: ${PY:-none})"
	echo "$pass passed, $fail failed"
	exit 1
fi

# --- the binary graph reader and the symmetrisation --------------------------------
for spec in rmat-9-16-32-4-0 rmat-10-8-16-3-7; do
	f=$T/$spec.strata
	"$STRATA" convert -i "$spec" -o "$f" >/dev/null || bad "strata convert -i $spec"
	"$STRATA" inspect -i "$f" --json >"$T/want.json"
	"$PY" $G/pyg_bench.py --inspect "$f" >"$T/got.json"
	check "reader: $spec matches strata inspect" "$PY" -c '
import json, sys
want, got = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k in ("dataset", "nodes", "edges", "id_bits", "features", "classes", "train", "valid", "test"):
    assert want[k] == got[k], (k, want[k], got[k])
assert want["degrees"]["in"]["max"] == got["max_in_degree"], (want["degrees"]["in"]["max"], got["max_in_degree"])
' "$T/want.json" "$T/got.json"
	if [ "$HAVE_TORCH" = 1 ]; then
		want=$("$STRATA" hitratio -i "$f" -o "$T/hr" --traffic=false --epochs 1 2>/dev/null | sed -n '1s/.* nodes, \([0-9]*\) edges,.*/\1/p')
		got=$("$PY" -c '
import sys; sys.path.insert(0, sys.argv[1])
import pyg_bench, torch
g = pyg_bench.read_strata(sys.argv[2])
src, dst = pyg_bench.prepare_edges(torch, g, True, "cpu")
assert bool((src != dst).all()), "self loops left"
key = dst * g["num_nodes"] + src
assert bool((key[1:] > key[:-1]).all()), "not sorted or duplicates"
pairs = set(zip(src.tolist(), dst.tolist()))
assert all((d, s) in pairs for s, d in pairs), "not symmetric"
print(src.numel())
' "$G" "$f")
		check "symmetrised edges of $spec: strata $want, pyg_bench $got" test -n "$want" -a "$want" = "$got"
	fi
done
printf 'STRATAG1\x02\0\0\0' >"$T/bad.strata"
if "$PY" $G/pyg_bench.py --inspect "$T/bad.strata" >/dev/null 2>"$T/err"; then
	bad "reader accepts a corrupt file"
else
	check "reader rejects a corrupt file with a message" grep -q "pyg_bench: .*bad.strata" "$T/err"
fi

# --- symcheck -----------------------------------------------------------------------
check "symcheck: $STRATA resolves" "$PY" $G/symcheck.py "$STRATA"
if command -v gcc >/dev/null; then
	mkdir -p "$T/stub" "$T/real"
	echo 'void cuInit(void){} void cuLaunchKernel(void){}' >"$T/stub.c"
	echo 'void cuInit(void){}' >"$T/real.c"
	echo 'void cuInit(void); void cuLaunchKernel(void); int main(int c, char **v){ if (c > 9) { cuInit(); cuLaunchKernel(); } return 0; }' >"$T/main.c"
	gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$T/stub/libcuda.so.1" "$T/stub.c" &&
		ln -s libcuda.so.1 "$T/stub/libcuda.so" &&
		gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$T/real/libcuda.so.1" "$T/real.c" &&
		gcc -o "$T/fake" "$T/main.c" -L"$T/stub" -lcuda
	check "symcheck: stub-linked binary resolves against the stub" env LD_LIBRARY_PATH="$T/stub" "$PY" $G/symcheck.py "$T/fake"
	if LD_LIBRARY_PATH="$T/real" "$PY" $G/symcheck.py "$T/fake" >"$T/sc.log" 2>&1; then
		bad "symcheck: a missing symbol must fail"
	else
		check "symcheck: names the missing symbol" grep -q "MISSING: cuLaunchKernel" "$T/sc.log"
	fi
fi

# --- compare.py -------------------------------------------------------------------
cat >"$T/c.jsonl" <<'EOF'
{"impl": "pyg", "dataset": "g", "model": "gcn", "layout": "edge_index", "nodes": 8, "edges": 20, "edges_sym": 30, "edges_trained": 38, "params": 100, "epochs": 12, "epoch_time_median_s": 0.2, "peak_bytes": 1073741824, "device_name": "GPU X", "pyg_version": "2.8", "torch_version": "2.11"}
{"impl": "pyg", "dataset": "g", "model": "gcn", "layout": "csr", "nodes": 8, "edges": 20, "edges_sym": 30, "edges_trained": 38, "params": 100, "epochs": 12, "epoch_time_median_s": 0.1}
{"impl": "pyg", "dataset": "g", "model": "gat", "layout": "edge_index", "nodes": 8, "edges": 20, "params": 7, "error": "oom: CUDA out of memory"}
EOF
printf '%s\n' '{"dataset":"g","model":"gcn","backend":"cuda","epochs":12,"epoch_time_median_s":0.05,"nodes":8,"edges":20,"params":100,"peak_tier_bytes":{"device0":2147483648,"host":0},"version":"0.1.0"}' >"$T/s.out"
"$PY" $G/compare.py add-strata --jsonl "$T/c.jsonl" --dataset g --model gcn --stdout "$T/s.out" >/dev/null
echo 'strata: out of device memory' >"$T/s.err"
: >"$T/empty.out"
"$PY" $G/compare.py add-strata --jsonl "$T/c.jsonl" --dataset g --model gat --stdout "$T/empty.out" --stderr "$T/s.err" --rc 1 >/dev/null
cat >"$T/bench.txt" <<'EOF'
BenchmarkSpMM/rmat20/F=128/trans=false-16         	      20	   1000000 ns/op	      1500 GB/s
BenchmarkCopyDtoD/512MiB-16                       	      20	    400000 ns/op	      3000 GB/s
BenchmarkGEMM-16                                  	      20	    100000 ns/op	     40000 GFLOPS
EOF
"$PY" $G/compare.py report --jsonl "$T/c.jsonl" --bench "$T/bench.txt" --csv "$T/c.csv" --md "$T/c.md"
check "compare.py: ratio against the faster PyG layout" grep -q '| g | gcn | 8 | 20 / 20 | 38 | 100 / 100 | 0.05 | 0.2 | 0.1 | 0.50 | yes | 2.00 | ' "$T/c.md"
check "compare.py: failed strata run and PyG OOM shown" grep -q '| g | gat .*failed: exit 1: strata: out of device memory | OOM |' "$T/c.md"
check "compare.py: SpMM at 50% of copy bandwidth" grep -q 'BenchmarkSpMM/rmat20/F=128/trans=false | 20 | 1.000 ms | 1500 | 50% |' "$T/c.md"
check "compare.py: csv has a header and two rows" test "$(wc -l <"$T/c.csv")" -eq 3

# --- pyg_bench.py and run-gpu.sh end to end (CPU, stand-in PyG) -------------------
if [ "$HAVE_TORCH" = 1 ]; then
	if "$PY" $G/pyg_bench.py --config configs/gpu/gcn.toml --graph "$T/rmat-9-16-32-4-0.strata" --device cpu >/dev/null 2>"$T/err"; then
		"$PY" -c 'import torch_geometric' 2>/dev/null || bad "pyg_bench.py without torch_geometric must fail"
	else
		check "pyg_bench.py without PyG says so" grep -q "torch_geometric" "$T/err"
	fi
	export PYTHONPATH=$ROOT/$G/testdata/fake_pyg${PYTHONPATH:+:$PYTHONPATH}
	f=$T/rmat-9-16-32-4-0.strata
	"$PY" $G/pyg_bench.py --config configs/gpu/gcn.toml --config configs/gpu/sage.toml --config configs/gpu/gat.toml \
		--graph "$f" --device cpu --layout edge_index --layout csr --set train.epochs=3 --jsonl "$T/p.jsonl" >/dev/null 2>"$T/err" ||
		bad "pyg_bench.py end to end: $(tail -n1 "$T/err")"
	for m in gcn sage gat; do
		want=$("$STRATA" train -c configs/gpu/$m.toml --set train.backend=cpu --set "data.dataset=$f" --set train.epochs=1 |
			"$PY" -c 'import json, sys; print(json.loads(sys.stdin.read().splitlines()[-1])["params"])')
		got=$("$PY" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["model"] == sys.argv[2] and r["layout"] == "edge_index":
        print(r.get("params"), r.get("error"))
' "$T/p.jsonl" "$m")
		check "$m: parameters strata $want, PyG shapes $got" test "$want None" = "$got"
	done
	check "pyg_bench.py: gcn and sage on csr too, gat skipped there" test "$(grep -c '"layout": "csr", .*"error": null' "$T/p.jsonl")" -eq 2
	check "pyg_bench.py --scale with strata convert" "$PY" $G/pyg_bench.py --config configs/gpu/sage.toml --scale 7 \
		--strata "$STRATA" --device cpu --set train.epochs=3
	OUT=$T/out WORK=$T/work STRATA=$STRATA BACKEND=cpu DEVICE=cpu PYTHON=$PY SCALES=8 EPOCHS=3 \
		bash $G/run-gpu.sh compare >"$T/run.log" 2>&1
	check "run-gpu.sh compare (cpu strata, stand-in PyG): 3 rows, all checks ok" \
		test "$(grep -c '^| rmat-8-16-128-16-0 | .* | ok |$' "$T/out/compare.md")" -eq 3
	check "run-gpu.sh wrote its results" test -s "$T/out/compare.csv" -a -s "$T/out/compare.jsonl" -a -s "$T/out/run-gpu.log"
else
	echo "skip the PyG checks: $PY has no torch (apt-get install python3-torch)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
