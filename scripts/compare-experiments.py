#!/usr/bin/env python3
"""Compare the runs of a rerun of the published experiments (make
experiments OUT=DIR) with the committed ones: every field of every run's
record must be equal, except the ones that measure time or the machine
(durations, rates, RSS, versions). Prints one line per difference and
exits 1 if there is any.

    python3 scripts/compare-experiments.py experiments/results DIR
"""
import json
import os
import re
import sys

VOLATILE = re.compile(r'(time|_s$|_s_|duration|rss|per_s|version|revision|dirty|threads|device$)')


def runs(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out[r.get('run_id') or r['run']] = r
    return out


def flat(x, prefix=''):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from flat(v, f'{prefix}.{k}' if prefix else k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from flat(v, f'{prefix}[{i}]')
    else:
        yield prefix, x


def main(want_dir, got_dir):
    bad = 0
    for name in sorted(os.listdir(want_dir)):
        w = os.path.join(want_dir, name, 'runs.jsonl')
        g = os.path.join(got_dir, name, 'runs.jsonl')
        if not os.path.exists(w):
            continue
        if not os.path.exists(g):
            print(f'{name}: no rerun ({g})')
            bad += 1
            continue
        want, got = runs(w), runs(g)
        if set(want) != set(got):
            print(f'{name}: runs differ: {len(want)} committed, {len(got)} rerun, {len(set(want) ^ set(got))} not in both')
            bad += 1
        same = 0
        for rid in sorted(set(want) & set(got), key=str):
            a = dict(flat(want[rid]))
            b = dict(flat(got[rid]))
            # A field the committed record lacks was added to the result since it
            # was stored: new information, not a changed result.
            diffs = [k for k in sorted(a) if not VOLATILE.search(k) and a.get(k) != b.get(k)]
            if diffs:
                bad += 1
                print(f'{name} run {want[rid].get("run")}: ' + ', '.join(f'{k}: {a.get(k)!r} -> {b.get(k)!r}' for k in diffs[:6]))
            else:
                same += 1
        print(f'{name}: {same} of {len(want)} runs identical (timing fields aside)')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
