#!/bin/bash
# fullgraph-ab.sh: full-graph epoch time and peak RSS on Coauthor Physics
# and R-MAT 2^20 of two strata binaries (an old one and a new one) and the
# PyTorch peer, run back to back and alternating, for the issue-17 acceptance ("peak RSS <= 0.5x the
# peer's with epoch time no worse than today's ratio to the peer"). Run it
# on a quiet machine; it prints one line per run and a summary of medians
# and ratios per workload.
#
#   scripts/perf/fullgraph-ab.sh OLD_BIN NEW_BIN [REPS] [EPOCHS] [WORKLOADS...]
#
#   OLD_BIN    e.g. a build of f5b7d4e (main before the memory work):
#              mkdir /tmp/old && git archive f5b7d4e | tar -x -C /tmp/old &&
#              (cd /tmp/old && scripts/build-models.sh && go build -o bin/strata ./cmd/strata)
#   NEW_BIN    e.g. ./bin/strata
#   REPS       rounds of (peer, old, new) per workload, old and new in
#              alternating order (default 3)
#   EPOCHS     epochs per run (default 10; the median epoch drops the first;
#              rmat-gat runs 7: docs/performance/cpu-fullgraph.md, section 3)
#   WORKLOADS  phys-gcn phys-gat phys-sage rmat-gcn rmat-sage rmat-gat
#              (default phys-gcn phys-gat)
#
# Environment: DATA (the physics .strata, default /tmp/m2perf/physics.strata,
# made with `strata convert` when missing), RMAT (R-MAT 2^20's .strata,
# default /tmp/perf/rmat20.strata, converted from the peer's own copy of the
# graph, which `data.py rmat 20 16 128 16 0` writes when missing), PEERS (the peer harness,
# default /work/shared/peers), PY (default /usr/bin/python3), LOCK (default
# /tmp/strata-bigmem.lock: each round holds it, as the peer peaks at ~4.6 GB),
# OUT (the run log, default /tmp/fullgraph-ab.log), PEER (default 1; 0 skips
# the peer: old against new alone, when the peer's figures are known).
#
# Commands (as docs/performance/cpu-fullgraph.md, section 3, with eval only
# after the last epoch): strata `train -c configs/gcn-physics.toml --set data.dataset=DATA
# --set train.epochs=E --set train.eval_every=0 --set train.threads=2
# --set output.json=true` + the model's sets; peer `fullgraph.py --threads 2
# --dataset coauthor-physics --layers 2 --lr 0.01 --weight-decay 5e-4
# --dropout 0.5 --epochs E --eval-every 0` + the model's arguments; R-MAT
# the same with configs/gcn-rmat20.toml, RMAT and the peer's rmat-20 with
# section 3's recipe (hidden 128, no input dropout, no weight decay). Peak
# RSS is /usr/bin/time's maximum resident set size for every process.
set -euo pipefail

if [ $# -lt 2 ]; then
	sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
OLD=$(realpath "$1")
NEW=$(realpath "$2")
REPS=${3:-3}
EPOCHS=${4:-10}
shift $(($# < 4 ? $# : 4))
WORKLOADS=${*:-phys-gcn phys-gat}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DATA=${DATA:-/tmp/m2perf/physics.strata}
PEERS=${PEERS:-/work/shared/peers}
PY=${PY:-/usr/bin/python3}
LOCK=${LOCK:-/tmp/strata-bigmem.lock}
OUT=${OUT:-/tmp/fullgraph-ab.log}
PEER=${PEER:-1}
for b in "$OLD" "$NEW"; do
	[ -x "$b" ] || { echo "fullgraph-ab: $b is not an executable strata binary" >&2; exit 2; }
done
[ -f "$PEERS/fullgraph.py" ] || { echo "fullgraph-ab: no fullgraph.py in PEERS=$PEERS (set PEERS)" >&2; exit 2; }
case " $WORKLOADS " in *" rmat-"*)
	RMAT=${RMAT:-/tmp/perf/rmat20.strata}
	if [ ! -f "$RMAT" ]; then
		mkdir -p "$(dirname "$RMAT")"
		(cd "$PEERS" && "$PY" data.py rmat 20 16 128 16 0 >&2)
		"$NEW" convert -i "${TMPDIR:-/tmp}/gnn-peers-data/rmat-20-16-128-16-0" -o "$RMAT"
	fi
	;;
esac
if [ ! -f "$DATA" ]; then
	DATA=/tmp/physics-ab/physics.strata
	mkdir -p /tmp/physics-ab
	[ -f "$DATA" ] || "$NEW" convert -i "$ROOT/../shared/data/coauthor-physics@random-20-30-seed0" -o "$DATA"
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
: >"$OUT"

S="--set data.dataset=$DATA --set train.epochs=$EPOCHS --set train.eval_every=0 --set train.threads=2 --set output.json=true --set output.progress=off"

# one NAME CMD...: runs CMD with /usr/bin/time, appends a JSON record to $OUT.
one() {
	local name=$1 w=$2 rep=$3
	shift 3
	local load
	load=$(cut -d' ' -f1 /proc/loadavg)
	/usr/bin/time -f '%M %U %S' -o "$TMP/time" "$@" 2>"$TMP/err" | tail -1 >"$TMP/out" || {
		echo "fullgraph-ab: $name failed:" >&2
		tail -5 "$TMP/err" >&2
		exit 1
	}
	"$PY" - "$name" "$w" "$rep" "$load" "$TMP/out" "$TMP/time" <<'EOF' | tee -a "$OUT"
import json, sys
name, w, rep, load, out, tm = sys.argv[1:]
d = json.load(open(out))
rss_kib, user, sys_s = open(tm).read().split()
print(json.dumps(dict(workload=w, who=name, rep=int(rep), load=float(load),
                      epoch_s=d["epoch_time_median_s"], peak_rss_gib=int(rss_kib) / 2**20,
                      cpu_s=float(user) + float(sys_s), final_loss=d.get("final_loss"))))
EOF
}

for w in $WORKLOADS; do
	case $w in
	phys-gcn) SA="--set model.name=gcn --set model.hidden=64" PA="--model gcn --hidden 64" ;;
	phys-sage) SA="--set model.name=sage --set model.hidden=64" PA="--model sage --hidden 64" ;;
	phys-gat) SA="--set model.name=gat --set model.hidden=8 --set model.options.heads=8 --set model.options.out_heads=1 --set model.options.attn_dropout=0" PA="--model gat --hidden 64 --heads 8" ;;
	rmat-gcn) SA="--set model.name=gcn" PA="--model gcn --hidden 128" ;;
	rmat-sage) SA="--set model.name=sage" PA="--model sage --hidden 128" ;;
	rmat-gat) SA="--set model.name=gat --set model.hidden=32 --set model.options.heads=4 --set model.options.out_heads=1 --set model.options.attn_dropout=0" PA="--model gat --hidden 128 --heads 4" ;;
	*) echo "fullgraph-ab: unknown workload $w (phys-gcn, phys-gat, phys-sage, rmat-gcn, rmat-sage, rmat-gat)" >&2; exit 2 ;;
	esac
	E=$EPOCHS CFG=configs/gcn-physics.toml PD="--dataset coauthor-physics" PR="--weight-decay 5e-4 --dropout 0.5"
	WS="$S"
	case $w in rmat-*)
		[ "$w" = rmat-gat ] && E=$(( EPOCHS < 7 ? EPOCHS : 7 ))
		CFG=configs/gcn-rmat20.toml PD="--dataset rmat-20" PR="--weight-decay 0 --dropout 0.5 --in-dropout 0"
		WS="--set data.dataset=$RMAT --set train.epochs=$E --set train.eval_every=0 --set train.threads=2 --set output.json=true --set output.progress=off --set model.hidden=128 --set model.dropout=0.5 --set model.input_dropout=0 --set train.weight_decay=0 --set train.lr=0.01"
		;;
	esac
	for rep in $(seq "$REPS"); do
		# The peer first, then the two strata binaries in an order that
		# alternates from round to round: the run right after the peer is
		# often slower (the peer's 4-5 GB leave the page cache and the
		# kernel's reclaim busy), so that place goes to old and new in turn.
		order="old new"
		[ $((rep % 2)) -eq 0 ] && order="new old"
		exec 9>"$LOCK"
		flock 9
		# shellcheck disable=SC2086
		[ "$PEER" = 0 ] || (cd "$PEERS" && one peer "$w" "$rep" "$PY" fullgraph.py --threads 2 $PD $PA \
			--layers 2 --lr 0.01 $PR --epochs "$E" --eval-every 0)
		for who in $order; do
			bin=$OLD
			[ "$who" = new ] && bin=$NEW
			# shellcheck disable=SC2086
			(cd "$ROOT" && one "$who" "$w" "$rep" "$bin" train -c $CFG $WS $SA)
		done
		flock -u 9
	done
done

"$PY" - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\nmedians over rounds (epoch s = each run's median epoch; RSS = /usr/bin/time max RSS)")
print("| workload | old epoch s | new epoch s | peer epoch s | old/peer | new/peer | new/old | old RSS GiB | new RSS GiB | peer RSS GiB | new RSS/peer | old CPU s | new CPU s | loads | same final loss |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for w in dict.fromkeys(r["workload"] for r in rows):
    nan = float("nan")
    m = {who: {k: statistics.median([r[k] for r in rows if r["workload"] == w and r["who"] == who] or [nan])
               for k in ("epoch_s", "peak_rss_gib", "cpu_s")} for who in ("old", "new", "peer")}
    loads = [r["load"] for r in rows if r["workload"] == w]
    losses = {r["final_loss"] for r in rows if r["workload"] == w and r["who"] != "peer"}
    o, n, p = m["old"], m["new"], m["peer"]
    print(f"| {w} | {o['epoch_s']:.3f} | {n['epoch_s']:.3f} | {p['epoch_s']:.3f} | {o['epoch_s']/p['epoch_s']:.3f} | "
          f"{n['epoch_s']/p['epoch_s']:.3f} | {n['epoch_s']/o['epoch_s']:.3f} | {o['peak_rss_gib']:.2f} | {n['peak_rss_gib']:.2f} | "
          f"{p['peak_rss_gib']:.2f} | {n['peak_rss_gib']/p['peak_rss_gib']:.2f} | {o['cpu_s']:.1f} | {n['cpu_s']:.1f} | "
          f"{min(loads):.1f}-{max(loads):.1f} | {'yes' if len(losses) == 1 else 'NO: ' + str(sorted(losses))} |")
EOF
