#!/bin/bash
# streams-ab.sh: the cost of dropout streams keyed by global ids (issue 29):
# median epoch time of two strata binaries, an old one (masks drawn by a
# row's position) and a new one, run back to back in alternating order on
# the workloads whose dropouts the keys touch. Run it on a quiet machine; it
# prints one line per run and the medians and new/old ratio per workload.
#
#   scripts/perf/streams-ab.sh OLD_BIN NEW_BIN [REPS] [EPOCHS]
#
#   OLD_BIN  a build of main before the keys (3dc5023):
#            git worktree add /tmp/base 3dc5023 && cp -r models/wasm /tmp/base/models/ &&
#            (cd /tmp/base && go build -o /tmp/strata-base ./cmd/strata)
#   NEW_BIN  e.g. ./bin/strata
#   REPS     rounds of (old, new), alternating which runs first (default 3)
#   EPOCHS   epochs per run (default 20; the median drops the first)
#
# Workloads (amazon-computers, 13,752 nodes, 491,722 edges; Cora for GAT):
#   full-gcn   full-graph GCN: the whole graph's rows in order, no keys
#   chunk-gcn  chunked GCN, 8 chunks: every chunk's rows keyed
#   mini-sage  mini-batch GraphSAGE, fanouts [10, 25], batches of 512: a
#              key per source of each block, uploaded per batch
#   full-gat   full-graph GAT on Cora with attention dropout 0.6: an edge
#              key per edge (8 bytes), computed once at bind
# Environment: DATA (default ../shared/data beside the checkout), OUT (the
# run log, default /tmp/streams-ab.log).
set -euo pipefail

if [ $# -lt 2 ]; then
	sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
OLD=$(realpath "$1")
NEW=$(realpath "$2")
REPS=${3:-3}
EPOCHS=${4:-20}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DATA=${DATA:-$ROOT/../shared/data}
OUT=${OUT:-/tmp/streams-ab.log}
for b in "$OLD" "$NEW"; do
	[ -x "$b" ] || { echo "streams-ab: $b is not an executable strata binary" >&2; exit 2; }
done
[ -d "$DATA/amazon-computers" ] || { echo "streams-ab: no $DATA/amazon-computers (set DATA)" >&2; exit 2; }

computers=(-c "$ROOT/configs/gcn-computers.toml" --set "data.dataset=\"$DATA/amazon-computers@random-20-30-seed0\"")
declare -A SETS=(
	[full-gcn]=""
	[chunk-gcn]="train.mode=chunked chunked.chunks=8"
	[mini-sage]="model.name=sage train.mode=minibatch sampler.name=uniform sampler.fanouts=[10,25] train.batch_size=512"
	[full-gat]="model.name=gat model.hidden=8 model.options.heads=8 model.options.attn_dropout=0.6"
)

# run BIN WORKLOAD: one run's median epoch time (s).
run() {
	local bin=$1 w=$2 args=() s
	if [ "$w" = full-gat ]; then
		args=(-c "$ROOT/configs/gcn-cora.toml")
	else
		args=("${computers[@]}")
	fi
	for s in ${SETS[$w]}; do args+=(--set "$s"); done
	"$bin" train "${args[@]}" --set "train.epochs=$EPOCHS" --set train.eval_every=0 --set train.threads=2 \
		--set output.json=true --set output.progress=off 2>>"$OUT" | tail -n1 |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch_time_median_s"])'
}

: >"$OUT"
for w in full-gcn chunk-gcn mini-sage full-gat; do
	olds=() news=()
	for r in $(seq 1 "$REPS"); do
		if [ $((r % 2)) -eq 1 ]; then
			o=$(run "$OLD" "$w"); n=$(run "$NEW" "$w")
		else
			n=$(run "$NEW" "$w"); o=$(run "$OLD" "$w")
		fi
		olds+=("$o") news+=("$n")
		echo "$w round $r: old $o s, new $n s" | tee -a "$OUT"
	done
	python3 - "$w" "${olds[*]}" "${news[*]}" <<'PY'
import statistics, sys
w, o, n = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
mo, mn = statistics.median(o), statistics.median(n)
print(f"{w}: median epoch old {mo:.4f} s, new {mn:.4f} s, new/old {mn/mo:.3f}")
PY
done
