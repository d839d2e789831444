#!/usr/bin/env bash
# The acceptance runs of docs/performance/mpi.md ("Multi-process training
# on MPI"): each case for 1, 2 and 4 ranks with METIS partitions and 2 and 4
# ranks with random ones, one epoch, dropout 0; writes OUT/results.jsonl
# (one line per run: case, ranks, partition, the result) and each run's
# output.model and OUT/<run>.rss (every rank's peak RSS in KiB, one line
# each, from /usr/bin/time), then compares every model with the 1-rank one.
# physics and rmat18 (2-4 GiB a rank) hold /tmp/strata-bigmem.lock. Needs bin/strata-mpi from make build-mpi (BIN=path for another).
#   scripts/mpi/acceptance.sh OUT [case...]   cases: cora rmat18 physics
# RUNS="4:metis 2:random" picks ranks:partition pairs; a run whose result
# and model are in OUT is skipped. LOCKED=1: the caller holds the lock for
# all the runs (flock /tmp/strata-bigmem.lock env LOCKED=1 acceptance.sh ...).
set -euo pipefail
OUT=${1:?usage: acceptance.sh OUT [case...]}
shift
cases=("${@:-cora rmat18 physics}")
MPIRUN=${MPIRUN:-mpirun --oversubscribe --allow-run-as-root}
BIN=${BIN:-bin/strata-mpi}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
common=(--set model.dropout=0 --set train.epochs=1 --set output.json=true --set output.progress=off)
args_of() {
	case $1 in
	cora) echo "-c configs/gcn-cora.toml --set train.mode=distfull" ;;
	rmat18) echo "-c configs/gcn-rmat20.toml --set data.dataset=rmat-18-16-128-16-0 --set train.mode=distfull" ;;
	physics) echo "-c configs/sage-physics-minibatch.toml --set train.mode=distmini" ;;
	esac
}
for c in ${cases[*]}; do
	for run in ${RUNS:-1:metis 2:metis 4:metis 2:random 4:random}; do
		n=${run%%:*} part=${run##*:}
		name="$c-$n-$part"
		pset=()
		[ "$part" = random ] && pset=(--set partition.name='"random"')
		if [ -s "$OUT/$name.json" ] && [ -s "$OUT/$name.model" ]; then
			echo "== $name: done already"
			continue
		fi
		lock=()
		if { [ "$c" = physics ] || [ "$c" = rmat18 ]; } && [ -z "${LOCKED:-}" ]; then
			lock=(flock /tmp/strata-bigmem.lock)
		fi
		echo "== $name $(date -u +%T)"
		# shellcheck disable=SC2046
		rm -f "$OUT/$name.rss"
		"${lock[@]}" nice $MPIRUN -np "$n" -x GOMEMLIMIT=4GiB /usr/bin/time -a -o "$OUT/$name.rss" -f "%M" "$BIN" train $(args_of "$c") "${common[@]}" "${pset[@]}" \
			--set output.model="$OUT/$name.model" >"$OUT/$name.json" 2>"$OUT/$name.err" || { echo "$name failed"; tail -5 "$OUT/$name.err"; continue; }
		python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps({"case":sys.argv[2],"ranks":int(sys.argv[3]),"partition":sys.argv[4],"result":r}))' \
			"$OUT/$name.json" "$c" "$n" "$part" >>"$OUT/results.jsonl"
	done
	scripts/mpi/compare-models.py --tol=1 "$OUT/$c-1-metis.model" "$OUT/$c"-[248]-*.model || true
done
