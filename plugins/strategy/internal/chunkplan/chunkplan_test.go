package chunkplan

import (
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
