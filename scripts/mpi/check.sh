#!/usr/bin/env bash
# Runs bin/strata-mpi (make build-mpi: strata built with -tags mpi) under mpirun on localhost
# (make test-mpi; docs/distributed.md):
#  1. distfull and distmini on Cora with 1, 2 and 4 ranks, dropout on, in
#     float64: one result line (rank 0's) with one entry per rank, and the
#     loss after one epoch of 1 rank to 1e-12 relative (masks are drawn by
#     the rows' global ids, so only the order of sums differs: the bound is
#     derived at plugins/strategy/strategytests' TestSplitsMatchFullGraph) and the same
#     test accuracy;
#  1b. distmini training link prediction (train.task = "link", batches of
#     512 edges, each batch's edges excluded from its blocks) on 1, 2 and
#     4 ranks: the loss after one epoch within the bound of
#     TestDistLinkMatchesMiniBatch (linkTol: steps x lr x 2 gamma_K x 100,
#     K = Cora's nodes) and the same test ROC-AUC;
#  2. a binary built without MPI, started by mpirun, exits 2 naming the fix;
#  3. a rank killed, or hung, mid-run ends the job (non-zero) within 60 s.
set -euo pipefail
BIN=${1:-bin/strata-mpi}
MPIRUN=${MPIRUN:-mpirun --oversubscribe --allow-run-as-root}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check.sh: $*" >&2; exit 1; }

common=(-c configs/gcn-cora.toml --set model.dropout=0.5 --set output.json=true --set output.progress=off)
for mode in distfull distmini; do
	extra=()
	if [ "$mode" = distmini ]; then
		extra=(--set sampler.name='"uniform"' --set 'sampler.fanouts=[5,10]' --set train.batch_size=32)
	fi
	for n in 1 2 4; do
		timeout 300 $MPIRUN -np "$n" "$BIN" train "${common[@]}" "${extra[@]}" --set train.mode="$mode" --set train.dtype=float64 \
			--set train.epochs=1 >"$tmp/$mode-$n.out" 2>"$tmp/$mode-$n.err" ||
			{ cat "$tmp/$mode-$n.err" >&2; fail "$mode on $n ranks failed"; }
	done
	python3 - "$tmp" "$mode" <<'PY'
import json, sys
tmp, mode = sys.argv[1], sys.argv[2]
res = {}
for n in (1, 2, 4):
    lines = open(f"{tmp}/{mode}-{n}.out").read().splitlines()
    if len(lines) != 1:
        sys.exit(f"{mode} on {n} ranks printed {len(lines)} lines on stdout, want rank 0's one")
    r = json.loads(lines[0])
    ranks = r.get(mode, {}).get("ranks", [])  # the strategy's figures
    if n > 1 and len(ranks) != n:
        sys.exit(f"{mode} on {n} ranks: {len(ranks)} rank entries")
    res[n] = r
for n in (2, 4):
    a, b = res[n], res[1]
    if abs(a["final_loss"] - b["final_loss"]) > 1e-12 * abs(b["final_loss"]):
        sys.exit(f"{mode}: loss after one epoch {a['final_loss']} on {n} ranks, {b['final_loss']} on 1")
    if a["test_acc"] != b["test_acc"]:
        sys.exit(f"{mode}: test accuracy {a['test_acc']} on {n} ranks, {b['test_acc']} on 1")
    sent = sum(x["sent_bytes"] for x in a[mode]["ranks"])
    print(f"{mode}: {n} ranks match 1 (loss {a['final_loss']:.6f}, test {a['test_acc']}), {sent} bytes sent in the epoch")
PY
done

# 1b. Link prediction on distmini.
link=(--set train.task='"link"' --set link.embedding=16 --set link.exclude='"batch"' --set sampler.name='"uniform"'
	--set 'sampler.fanouts=[5,10]' --set train.batch_size=512 --set train.dtype=float64 --set train.epochs=1)
for n in 1 2 4; do
	timeout 300 $MPIRUN -np "$n" "$BIN" train "${common[@]}" "${link[@]}" --set train.mode=distmini >"$tmp/link-$n.out" 2>"$tmp/link-$n.err" ||
		{ cat "$tmp/link-$n.err" >&2; fail "distmini link prediction on $n ranks failed"; }
done
python3 - "$tmp" <<'PY'
import json, math, sys
tmp = sys.argv[1]
res = {n: json.loads(open(f"{tmp}/link-{n}.out").read()) for n in (1, 2, 4)}
one = res[1]
steps = math.ceil(one["link"]["train_edges"] / 512)
K, u = 2708, 2.0**-53
tol = steps * 0.01 * 2 * (K * u / (1 - K * u)) * 100
for n in (2, 4):
    a = res[n]
    if a["targets"] != "link" or len(a["distmini"]["ranks"]) != n:
        sys.exit(f"link on {n} ranks: targets {a['targets']!r}, {len(a['distmini']['ranks'])} rank entries")
    if abs(a["final_loss"] - one["final_loss"]) > tol * abs(one["final_loss"]):
        sys.exit(f"link: loss after one epoch {a['final_loss']} on {n} ranks, {one['final_loss']} on 1 (bound {tol:.3g} relative)")
    if a["test_acc"] != one["test_acc"]:
        sys.exit(f"link: test ROC-AUC {a['test_acc']} on {n} ranks, {one['test_acc']} on 1")
    edges = sum(x.get("train_edges", 0) for x in a["distmini"]["ranks"])
    if edges != one["link"]["train_edges"]:
        sys.exit(f"link on {n} ranks: the ranks own {edges} training edges of {one['link']['train_edges']}")
    print(f"distmini link: {n} ranks match 1 (loss {a['final_loss']:.6f}, test ROC-AUC {a['test_acc']:.4f}, {steps} steps)")
PY

# 2. Without the tag: exit 2, naming -tags mpi.
go build -o "$tmp/strata-nompi" ./cmd/strata
set +e
$MPIRUN -np 2 "$tmp/strata-nompi" train "${common[@]}" --set train.mode=distfull >"$tmp/nompi.out" 2>"$tmp/nompi.err"
rc=$?
set -e
grep -q -- "-tags mpi" "$tmp/nompi.err" || { cat "$tmp/nompi.err" >&2; fail "a binary without MPI under mpirun does not name -tags mpi"; }
[ "$rc" -ne 0 ] || fail "a binary without MPI under mpirun exited 0"
echo "without -tags mpi: exit $rc, names the fix"

# 2b. Ranks started with different configs (an MPMD command line) refuse
# to train, naming the fix.
set +e
$MPIRUN -np 1 "$BIN" train "${common[@]}" --set train.mode=distfull : -np 1 "$BIN" train "${common[@]}" --set train.mode=distfull \
	--set model.hidden=32 >"$tmp/mpmd.out" 2>"$tmp/mpmd.err"
rc=$?
set -e
grep -q "start every rank with the same config" "$tmp/mpmd.err" || { cat "$tmp/mpmd.err" >&2; fail "ranks with different configs were not refused"; }
[ "$rc" -ne 0 ] || fail "ranks with different configs exited 0"
echo "different configs on the ranks: exit $rc, refused"

# 3. A rank killed mid-run (mpirun ends the job), and a rank that hangs
# (stopped: mpirun sees nothing, the others' watchdog aborts after
# STRATA_MPI_TIMEOUT): the job ends, non-zero, within 60 s, and rank 0
# still prints its result line (status "interrupted" after mpirun's
# SIGTERM, "failed" after the watchdog) and commits output.csv and
# output.log with the epochs it finished, leaving no temp file.
for how in KILL STOP; do
	$MPIRUN -np 2 -x STRATA_MPI_TIMEOUT=5s "$BIN" train "${common[@]}" --set train.mode=distfull --set train.epochs=100000 \
		--set output.csv="$tmp/$how.csv" --set output.log="$tmp/$how.log" >"$tmp/$how.out" 2>"$tmp/$how.err" &
	job=$!
	victim=""
	for _ in $(seq 1 100); do
		for p in $(pgrep -P "$job" 2>/dev/null); do
			if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1; then victim=$p; fi
		done
		[ -n "$victim" ] && break
		sleep 0.2
	done
	[ -n "$victim" ] || { kill "$job"; fail "found no rank 1 to $how"; }
	sleep 3 # let it train
	kill -"$how" "$victim"
	start=$(date +%s)
	for _ in $(seq 1 600); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$job" 2>/dev/null; then
		kill -CONT "$victim" 2>/dev/null || true
		kill "$job"
		fail "the job still runs 60 s after rank 1 got SIG$how"
	fi
	set +e
	wait "$job"
	rc=$?
	set -e
	[ "$rc" -ne 0 ] || fail "the job exited 0 after rank 1 got SIG$how"
	want=interrupted
	[ "$how" = STOP ] && want=failed
	python3 - "$tmp" "$how" "$want" <<'PY' || { cat "$tmp/$how.err" >&2; fail "rank 0 did not end with its result line and committed logs after rank 1 got SIG$how"; }
import glob, json, sys
tmp, how, want = sys.argv[1:]
lines = open(f"{tmp}/{how}.out").read().splitlines()
if len(lines) != 1:
    sys.exit(f"stdout has {len(lines)} lines, want rank 0's result line")
r = json.loads(lines[0])
if r.get("status") != want or r["epochs"] < 1:
    sys.exit(f"status {r.get('status')!r} after {r['epochs']} epochs, want {want!r} after at least 1")
rows = open(f"{tmp}/{how}.csv").read().splitlines()
logs = open(f"{tmp}/{how}.log").read().splitlines()
if len(rows) != 1 + r["epochs"] or len(logs) != r["epochs"]:
    sys.exit(f"output.csv has {len(rows)} lines and output.log {len(logs)}, want a header and {r['epochs']} epochs")
if glob.glob(f"{tmp}/.*.tmp"):
    sys.exit(f"temp files left: {glob.glob(f'{tmp}/.*.tmp')}")
PY
	echo "rank 1 got SIG$how: the job ended in $(($(date +%s) - start)) s with exit $rc; rank 0 printed its result ($want) and committed its logs:"
	grep -E 'strata:|exit|abort' "$tmp/$how.err" | head -3
done
