#!/bin/bash
# linkpred-peer.sh: full-graph link prediction (the GAE protocol of
# experiments/link-zoo.toml, GCN 32-16, dot decoder) against the PyTorch
# peer ../shared/peers/linkpred.py, run back to back on the same machine:
# test ROC-AUC, AP, the median epoch time and peak RSS of each side, per
# dataset and seed, then the means and the ratios strata / peer. Run it on
# a quiet machine.
#
#   scripts/perf/linkpred-peer.sh [BIN] [SEEDS] [DATASETS...]
#
#   BIN       the strata binary (default ./bin/strata)
#   SEEDS     seeds 0 .. SEEDS-1 (default 5)
#   DATASETS  cora citeseer (default); a name under ../shared/data
#
# Environment: PEERS (the peer harness, default /work/shared/peers),
# DATA (default /work/shared/data), PY (default /usr/bin/python3),
# OUT (the raw JSON lines, default /tmp/linkpred-peer.jsonl), EXTRA
# (more arguments of strata train, e.g. '--set fullgraph.sparse_input=true').
#
# Commands: strata `train --set data.dataset=D --set train.task=link
# --set model.hidden=32 --set link.embedding=16 --set model.dropout=0
# --set model.input_dropout=0 --set train.weight_decay=0 --set
# train.epochs=200 --set train.threads=2 --set train.seed=S`; the peer
# `linkpred.py --dataset D --epochs 200 --threads 2 --seed S`. Both median
# epochs exclude their first two (the peer's --warmup 2, strata's median).
set -euo pipefail
BIN=${1:-./bin/strata}
SEEDS=${2:-5}
shift $(( $# > 2 ? 2 : $# )) || true
DATASETS=("$@")
[ ${#DATASETS[@]} -eq 0 ] && DATASETS=(cora citeseer)
PEERS=${PEERS:-/work/shared/peers}
DATA=${DATA:-/work/shared/data}
PY=${PY:-/usr/bin/python3}
OUT=${OUT:-/tmp/linkpred-peer.jsonl}
read -r -a EXTRA_ARGS <<< "${EXTRA:-}"
: > "$OUT"
for ds in "${DATASETS[@]}"; do
	spec="$DATA/$ds"
	[ "$ds" = cora ] && spec=embedded:cora
	for ((s = 0; s < SEEDS; s++)); do
		/usr/bin/time -f '%M' -o /tmp/linkpred-peer.rss "$BIN" train --set data.dataset="$spec" --set train.task=link \
			--set model.name=gcn --set model.hidden=32 --set link.embedding=16 --set model.dropout=0 --set model.input_dropout=0 \
			--set train.weight_decay=0 --set train.epochs=200 --set train.threads=2 --set train.seed="$s" \
			--set output.progress=off --set output.json=true "${EXTRA_ARGS[@]}" > /tmp/linkpred-peer.out
		"$PY" -c 'import json,sys; r=json.loads(open("/tmp/linkpred-peer.out").readline()); rss=int(open("/tmp/linkpred-peer.rss").read().split()[-1]); print(json.dumps(dict(side="strata", dataset=sys.argv[1], seed=int(sys.argv[2]), auc=r["test_acc"], ap=r["metrics"]["test_ap"], epoch_s=r["epoch_time_median_s"], rss_mib=rss/1024)))' "$ds" "$s" >> "$OUT"
		(cd "$PEERS" && /usr/bin/time -f '%M' -o /tmp/linkpred-peer.rss "$PY" linkpred.py --dataset "$ds" --epochs 200 --threads 2 --seed "$s" 2>/dev/null) > /tmp/linkpred-peer.out
		"$PY" -c 'import json,sys; r=json.loads(open("/tmp/linkpred-peer.out").readline()); rss=int(open("/tmp/linkpred-peer.rss").read().split()[-1]); print(json.dumps(dict(side="peer", dataset=sys.argv[1], seed=int(sys.argv[2]), auc=r["test_auc"], ap=r["test_ap"], epoch_s=r["epoch_time_median_s"], rss_mib=rss/1024)))' "$ds" "$s" >> "$OUT"
		tail -2 "$OUT"
	done
done
"$PY" - "$OUT" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for ds in dict.fromkeys(r["dataset"] for r in rows):
    m = {side: [r for r in rows if r["dataset"] == ds and r["side"] == side] for side in ("strata", "peer")}
    mean = lambda side, k: st.mean(r[k] for r in m[side])
    med = lambda side, k: st.median(r[k] for r in m[side])
    print(f"{ds}: AUC {mean('strata','auc'):.4f} vs {mean('peer','auc'):.4f} ({100*(mean('strata','auc')-mean('peer','auc')):+.1f} points), "
          f"AP {mean('strata','ap'):.4f} vs {mean('peer','ap'):.4f}, "
          f"epoch {med('strata','epoch_s'):.4f} / {med('peer','epoch_s'):.4f} s = {med('strata','epoch_s')/med('peer','epoch_s'):.2f}x, "
          f"peak RSS {med('strata','rss_mib'):.0f} / {med('peer','rss_mib'):.0f} MiB = {med('strata','rss_mib')/med('peer','rss_mib'):.2f}x")
PY
