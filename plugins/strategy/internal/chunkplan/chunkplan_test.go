package chunkplan

import (
	"context"
	"reflect"
	"testing"
)

// handPlan is a plan of m partitions of n chunks whose chunks read the
// rows srcs (chunk c reads srcs[c]), under the plain schedule.
func handPlan(m, n int, srcs [][]int32) *Plan {
	p := &Plan{M: m, N: n, Chunks: make([]*Chunk, m*n), Sched: plainSchedule(m, n)}
	for c := range p.Chunks {
		p.Chunks[c] = &Chunk{Id: c, part: c / n, Src: srcs[c]}
	}
	return p
}

// TestCommAndReorganizeByHand checks HongTu's row counts (§5.3: V_ori,
// V_+p2p, V_+ru) and its 2-phase reorganisation (Alg. 4) on plans whose
// answers were worked out by hand (in the comments).
func TestCommAndReorganizeByHand(t *testing.T) {
	cases := []struct {
		name          string
		m, n, nodes   int
		srcs          [][]int32
		plain, reorg  CommRows
		reorgSchedule [][]int
	}{{
		// Phase 1: 2 devices, 2 chunks each. Partition 1's chunk 3 shares
		// {6, 7, 0} with chunk 0 and chunk 2 shares {2, 3, 4} with chunk
		// 1, so Alg. 4 pairs 0 with 3 and 1 with 2.
		// Plain [[0 2] [1 3]]: batch 0 loads 0,1,6,7 + 4,5,2,3 (8 rows,
		// no duplicate); batch 1 loads 2,3,4 + 6,7,0 (6 rows, all read by
		// batch 0: reused). Ori 14, p2p 14, ru 8.
		// Reorganised [[0 3] [1 2]]: batch 0 loads 0,1,6,7 and chunk 3's
		// 6,7,0 are its duplicates (p2p); batch 1 loads 2,3,4, then 5,
		// chunk 2's 4,2,3 being duplicates. Ori 14, p2p 8, ru 8.
		name: "phase 1 pairs chunks", m: 2, n: 2, nodes: 8,
		srcs:          [][]int32{{0, 1, 6, 7}, {2, 3, 4}, {4, 5, 2, 3}, {6, 7, 0}},
		plain:         CommRows{Ori: 14, P2p: 14, Ru: 8},
		reorg:         CommRows{Ori: 14, P2p: 8, Ru: 8},
		reorgSchedule: [][]int{{0, 3}, {1, 2}},
	}, {
		// Phase 2: one device, three chunks. Chunk 2 shares row 3 with
		// chunk 0, chunk 1 shares nothing, so the order is 0, 2, 1.
		// Plain: every row is new in its batch (3 is read by batch 0 and
		// batch 2, not adjacent): 6, 6, 6. Reorganised: batch 1 (chunk 2)
		// reuses row 3 from batch 0: 6, 6, 5.
		name: "phase 2 orders batches", m: 1, n: 3, nodes: 6,
		srcs:          [][]int32{{0, 3}, {1, 4}, {2, 3}},
		plain:         CommRows{Ori: 6, P2p: 6, Ru: 6},
		reorg:         CommRows{Ori: 6, P2p: 6, Ru: 5},
		reorgSchedule: [][]int{{0}, {2}, {1}},
	}, {
		// Ties keep the first candidate: no chunk shares a row, so Alg. 4
		// leaves the plain schedule as it is.
		name: "no sharing keeps the order", m: 2, n: 2, nodes: 8,
		srcs:          [][]int32{{0, 1}, {2, 3}, {4, 5}, {6, 7}},
		plain:         CommRows{Ori: 8, P2p: 8, Ru: 8},
		reorg:         CommRows{Ori: 8, P2p: 8, Ru: 8},
		reorgSchedule: [][]int{{0, 2}, {1, 3}},
	}, {
		// Both phases, 2 devices of 3 chunks. Phase 1: batch 0 = chunk 0
		// ({0, 1}) + chunk 4 ({1, 6}: shares 1 row; 3 and 5 share none);
		// batch 1 = chunk 1 + chunk 3 (no sharing: the first left); batch
		// 2 = chunk 2 + chunk 5. Phase 2 from batch 0 ({0, 1, 6}): batch 2
		// ({4, 5, 6, 8}) shares row 6, batch 1 ({2, 3, 7}) none, so the
		// order is 0, 2, 1.
		// Plain [[0 3] [1 4] [2 5]]: batch 0 loads 0,1,7; batch 1 loads
		// 2,3,1,6 (1 reused from batch 0); batch 2 loads 4,5,6,8 (6
		// reused). Ori 11, p2p 11, ru 9.
		// Reorganised: batch 0 loads 0,1,6 (chunk 4's 1 a duplicate): ori
		// 4, p2p 3, ru 3; batch 1 loads 4,5,6,8 (6 reused): 8, 7, 6; batch
		// 2 loads 2,3,7: 11, 10, 9.
		name: "both phases", m: 2, n: 3, nodes: 9,
		srcs:          [][]int32{{0, 1}, {2, 3}, {4, 5, 6}, {7}, {1, 6}, {8}},
		plain:         CommRows{Ori: 11, P2p: 11, Ru: 9},
		reorg:         CommRows{Ori: 11, P2p: 10, Ru: 9},
		reorgSchedule: [][]int{{0, 4}, {2, 5}, {1, 3}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := handPlan(tc.m, tc.n, tc.srcs)
			if got := p.Comm(tc.nodes); got != tc.plain {
				t.Errorf("plain schedule %v: rows %+v, want %+v", p.Sched, got, tc.plain)
			}
			q := p.Reorganize(tc.nodes)
			if !reflect.DeepEqual(q.Sched, tc.reorgSchedule) {
				t.Fatalf("Alg. 4 schedule %v, want %v", q.Sched, tc.reorgSchedule)
			}
			if got := q.Comm(tc.nodes); got != tc.reorg {
				t.Errorf("reorganised schedule %v: rows %+v, want %+v", q.Sched, got, tc.reorg)
			}
			if !reflect.DeepEqual(p.Sched, plainSchedule(tc.m, tc.n)) {
				t.Errorf("Reorganize changed the plan it was given: %v", p.Sched)
			}
		})
	}
}

// TestTransitionsByHand checks the deduplication plan (the transition
// sets of each batch and device and the reuse plan) on schedules worked
// out by hand, and that it loads what Comm counts: its sets hold V_+p2p
// rows, V_+ru of them loaded from the host.
func TestTransitionsByHand(t *testing.T) {
	cases := []struct {
		name       string
		m, n       int
		owner      []int32
		srcs       [][]int32
		sched      [][]int // nil: the plain schedule
		rows, prev [][][]int32
	}{{
		// Nodes 0-3 belong to device 0, 4-7 to device 1. Batch 0 (chunks
		// 0 and 2) reads 0,1,6,7,4,5,2,3: device 0's set is 0,1,2,3 and
		// device 1's 6,7,4,5. Batch 1 (chunks 1 and 3) reads 2,3,4,6,7,0,
		// every one in its owner's set of batch 0: device 0's 2,3,0 were
		// at positions 2,3,0, device 1's 4,6,7 at 2,0,1.
		name: "two devices", m: 2, n: 2,
		owner: []int32{0, 0, 0, 0, 1, 1, 1, 1},
		srcs:  [][]int32{{0, 1, 6, 7}, {2, 3, 4}, {4, 5, 2, 3}, {6, 7, 0}},
		rows:  [][][]int32{{{0, 1, 2, 3}, {6, 7, 4, 5}}, {{2, 3, 0}, {4, 6, 7}}},
		prev:  [][][]int32{{{0, 0, 0, 0}, {0, 0, 0, 0}}, {{3, 4, 1}, {3, 1, 2}}},
	}, {
		// One device, the schedule 0, 2, 1: a set is its chunk's rows;
		// chunk 2 finds row 3 at position 1 of chunk 0's, chunk 1 shares
		// nothing with chunk 2.
		name: "one device", m: 1, n: 3,
		owner: make([]int32, 5),
		srcs:  [][]int32{{0, 3}, {1, 4}, {2, 3}},
		sched: [][]int{{0}, {2}, {1}},
		rows:  [][][]int32{{{0, 3}}, {{2, 3}}, {{1, 4}}},
		prev:  [][][]int32{{{0, 0}}, {{0, 2}}, {{0, 0}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := handPlan(tc.m, tc.n, tc.srcs)
			p.Owner = tc.owner
			if tc.sched != nil {
				p.Sched = tc.sched
			}
			tr, err := p.Transitions(context.Background(), true)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tr.Rows, tc.rows) || !reflect.DeepEqual(tr.Prev, tc.prev) {
				t.Fatalf("sets %v, reuse %v; want %v, %v", tr.Rows, tr.Prev, tc.rows, tc.prev)
			}
			var sets, loads int64
			for j := range tr.Rows {
				for i, rows := range tr.Rows[j] {
					sets += int64(len(rows))
					for _, q := range tr.Prev[j][i] {
						if q == 0 {
							loads++
						}
					}
				}
			}
			c := p.Comm(len(tc.owner))
			if sets != c.P2p || loads != c.Ru {
				t.Errorf("the plan holds %d rows and loads %d, Comm counts V_+p2p %d and V_+ru %d", sets, loads, c.P2p, c.Ru)
			}
			noReuse, err := p.Transitions(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			if noReuse.Prev != nil || !reflect.DeepEqual(noReuse.Rows, tc.rows) {
				t.Errorf("without reuse: sets %v, reuse plan %v; want %v and none", noReuse.Rows, noReuse.Prev, tc.rows)
			}
		})
	}
}
