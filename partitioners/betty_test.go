package partitioners

import (
	"context"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/registry"
)

// bruteREG builds the REG densely: w[i][j] = distinct inputs shared by
// outputs i != j, over the inputs feeding at most maxHub outputs (all when
// maxHub is 0).
func bruteREG(b *graph.CSR, maxHub int) ([][]int64, int64) {
	n := b.NumRows
	sets := make([]map[int64]bool, n)
	deg := map[int64]int{}
	for i := 0; i < n; i++ {
		sets[i] = map[int64]bool{}
		for e := b.Indptr[i]; e < b.Indptr[i+1]; e++ {
			c := b.Col(e)
			if !sets[i][c] {
				sets[i][c] = true
				deg[c]++
			}
		}
	}
	var skipped int64
	for _, d := range deg {
		if maxHub > 0 && d > maxHub {
			skipped++
		}
	}
	w := make([][]int64, n)
	for i := range w {
		w[i] = make([]int64, n)
		for j := range w[i] {
			if i == j {
				continue
			}
			for c := range sets[i] {
				if sets[j][c] && (maxHub == 0 || deg[c] <= maxHub) {
					w[i][j]++
				}
			}
		}
	}
	return w, skipped
}

func TestRedundancyGraphBrute(t *testing.T) {
	tests := []struct {
		name       string
		rows, cols int
		m, maxHub  int
		wide       bool
	}{
		{"square", 40, 40, 150, 0, false},
		{"square hubs", 40, 40, 150, 3, false},
		{"block", 30, 100, 200, 0, false},
		{"block dense", 20, 10, 150, 0, false},
		{"block hubs", 20, 10, 150, 5, false},
		{"block wide", 25, 60, 120, 0, true},
		{"edgeless", 8, 8, 0, 0, false},
		{"no shared inputs", 5, 500, 5, 0, false},
		{"one row", 1, 5, 4, 0, false},
		{"no rows", 0, 4, 0, 0, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for rep := 0; rep < 3; rep++ {
				b := randomBlock(tt.rows, tt.cols, tt.m, uint64(10*i+rep), tt.wide)
				reg, w, st, err := RedundancyGraph(context.Background(), b, tt.maxHub)
				if err != nil {
					t.Fatal(err)
				}
				if err := reg.Validate(); err != nil {
					t.Fatal(err)
				}
				dense, skipped := bruteREG(b, tt.maxHub)
				var edges int64
				for r := 0; r < tt.rows; r++ {
					var cols []int64
					for c := range dense[r] {
						if dense[r][c] > 0 {
							cols = append(cols, int64(c))
						}
					}
					lo, hi := reg.Indptr[r], reg.Indptr[r+1]
					if int(hi-lo) != len(cols) {
						t.Fatalf("row %d: %d entries, want %d", r, hi-lo, len(cols))
					}
					for e := lo; e < hi; e++ {
						c := reg.Col(e)
						if c != cols[e-lo] || w[e] != dense[r][c] {
							t.Fatalf("row %d entry %d: (%d, w %d), want (%d, w %d)", r, e-lo, c, w[e], cols[e-lo], dense[r][cols[e-lo]])
						}
					}
					edges += int64(len(cols))
				}
				if st.Edges != edges || st.SkippedHubs != skipped || st.Outputs != tt.rows || st.Inputs != tt.cols {
					t.Fatalf("stats %+v: want %d edges, %d skipped hubs", st, edges, skipped)
				}
			}
		})
	}
}

func TestRedundancyGraphExample(t *testing.T) {
	// Outputs 0,1,2 read inputs {0,1}, {1,2}, {0,1,2,1}: output 2 has a
	// duplicate entry, which counts once.
	b := &graph.CSR{NumRows: 3, NumCols: 3, Indptr: []int64{0, 2, 4, 8}, Idx32: []int32{1, 0, 1, 2, 0, 1, 2, 1}}
	reg, w, st, err := RedundancyGraph(context.Background(), b, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 0-1 share {1}; 0-2 share {0,1}; 1-2 share {1,2}.
	if !slices.Equal(reg.Indptr, []int64{0, 2, 4, 6}) || !slices.Equal(reg.Idx32, []int32{1, 2, 0, 2, 0, 1}) ||
		!slices.Equal(w, []int64{1, 2, 1, 2, 2, 2}) {
		t.Fatalf("REG %v %v weights %v", reg.Indptr, reg.Idx32, w)
	}
	// Inputs feed 2, 3 and 2 outputs: 2 + 6 + 2 pair updates.
	if st.Pairs != 10 || st.Edges != 6 || st.SkippedHubs != 0 {
		t.Fatalf("stats %+v", st)
	}
	_, _, st, _ = RedundancyGraph(context.Background(), b, 2)
	if st.SkippedHubs != 1 || st.SkippedPairs != 6 || st.Pairs != 4 {
		t.Fatalf("max hub 2: stats %+v", st)
	}
}

func TestRedundancyGraphDeterministic(t *testing.T) {
	b := randomBlock(3000, 2000, 30000, 5, false)
	prev := runtime.GOMAXPROCS(1)
	r1, w1, _, err := RedundancyGraph(context.Background(), b, 0)
	runtime.GOMAXPROCS(4)
	r4, w4, _, err4 := RedundancyGraph(context.Background(), b, 0)
	runtime.GOMAXPROCS(prev)
	if err != nil || err4 != nil {
		t.Fatal(err, err4)
	}
	if !slices.Equal(r1.Indptr, r4.Indptr) || !slices.Equal(r1.Idx32, r4.Idx32) || !slices.Equal(w1, w4) {
		t.Fatal("REG depends on GOMAXPROCS")
	}
	// Symmetric with symmetric weights.
	tr, perm := graph.Transpose(r1)
	if !slices.Equal(tr.Indptr, r1.Indptr) || !slices.Equal(tr.Idx32, r1.Idx32) {
		t.Fatal("REG is not symmetric")
	}
	for e, p := range perm {
		if w1[p] != w1[e] {
			t.Fatalf("entry %d: weight %d, transposed %d", e, w1[e], w1[p])
		}
	}
}

func TestRedundancyGraphErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := randomBlock(10, 10, 30, 1, false)
	for _, tt := range []struct {
		ctx    context.Context
		b      *graph.CSR
		maxHub int
		want   string
	}{
		{context.Background(), nil, 0, "nil block"},
		{context.Background(), b, -1, "max hub degree -1"},
		{ctx, b, 0, "context canceled"},
	} {
		if _, _, _, err := RedundancyGraph(tt.ctx, tt.b, tt.maxHub); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}

// communityBlock returns a block of groups x per outputs where the outputs
// of group g read fanout inputs from their group's own pool of inputs,
// plus one random input from anywhere, shuffled over the output ids. It
// also returns the group of every output.
func communityBlock(groups, per, pool, fanout int, seed uint64) (*graph.CSR, []int32) {
	rng := splitmix64(seed)
	n := groups * per
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := int(rng.below(uint64(i + 1)))
		perm[i], perm[j] = perm[j], perm[i]
	}
	lists := make([][]int64, n)
	group := make([]int32, n)
	for o := 0; o < n; o++ {
		g := o / per
		group[perm[o]] = int32(g)
		for f := 0; f < fanout; f++ {
			lists[perm[o]] = append(lists[perm[o]], int64(g*pool)+int64(rng.below(uint64(pool))))
		}
		lists[perm[o]] = append(lists[perm[o]], int64(rng.below(uint64(groups*pool))))
	}
	b := &graph.CSR{NumRows: n, NumCols: groups * pool, Indptr: make([]int64, n+1)}
	for o, l := range lists {
		for _, c := range l {
			b.Idx32 = append(b.Idx32, int32(c))
		}
		b.Indptr[o+1] = int64(len(b.Idx32))
	}
	return b, group
}

func TestBettyBlock(t *testing.T) {
	b, group := communityBlock(4, 100, 60, 8, 1)
	const k = 4
	bt := newPart(t, "partitioner.betty-reg").(*BettyREG)
	parts, st, err := bt.PartitionBlock(context.Background(), b, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	rnd, _ := (&Random{Seed: 3}).Partition(context.Background(), b, k, nil)
	rng, _ := (&Range{Balance: "nodes"}).Partition(context.Background(), b, k, nil)
	q, qr, qg, qi := Quality(b, parts, k), Quality(b, rnd, k), Quality(b, rng, k), Quality(b, group, k)
	t.Logf("redundancy: betty %.3f, by group %.3f, random %.3f, range %.3f; REG %d entries, %d pair updates",
		q.Redundancy, qi.Redundancy, qr.Redundancy, qg.Redundancy, st.Edges, st.Pairs)
	if q.EmptyParts != 0 || q.NodeBalance > 1.05 {
		t.Fatalf("betty: %v", q)
	}
	if q.Redundancy > qi.Redundancy+0.05 || q.Redundancy >= qr.Redundancy-0.5 || q.Redundancy >= qg.Redundancy-0.5 {
		t.Fatalf("betty redundancy %.3f, random %.3f, range %.3f", q.Redundancy, qr.Redundancy, qg.Redundancy)
	}
	// Same result through the Partitioner interface, and a second time.
	again, err := bt.Partition(context.Background(), b, k, nil)
	if err != nil || !slices.Equal(again, parts) {
		t.Fatalf("not deterministic: %v", err)
	}
	// A hub limit below every input's degree leaves an edgeless REG, which
	// is split into node ranges.
	bt.MaxHubDegree = 1
	parts, st, err = bt.PartitionBlock(context.Background(), b, k, nil)
	if err != nil || st.Edges != 0 || st.SkippedHubs == 0 || !slices.IsSorted(parts) {
		t.Fatalf("max hub 1: %v %+v", err, st)
	}
}

// TestBettyBalanceInputs checks balance = "inputs": on a block where half
// the outputs read 9 inputs and the other half none, METIS balances
// 1 + inputs per micro-batch, within its imbalance tolerance (ufactor 30:
// 1.03 of the mean part) plus one output's weight (METIS moves whole
// vertices); and it refuses node weights from the caller.
func TestBettyBalanceInputs(t *testing.T) {
	b, _ := communityBlock(4, 100, 60, 8, 1)
	b = keepRows(b, func(r int) bool { return r%2 == 0 }) // the odd outputs read nothing
	const k = 4
	bt := newPart(t, "partitioner.betty-reg").(*BettyREG)
	bt.Balance = balanceInputs
	parts, _, err := bt.PartitionBlock(context.Background(), b, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := inputWeights(b)
	var total, maxW int64
	part := make([]int64, k)
	for r, p := range parts {
		part[p] += w[r]
		total += w[r]
		maxW = max(maxW, w[r])
	}
	mean := float64(total) / k
	if worst := float64(slices.Max(part)); worst > 1.03*mean+float64(maxW) {
		t.Errorf("balance = inputs: part weights %v, heaviest above 1.03 × mean %.1f + one output (%d)", part, mean, maxW)
	}
	if _, _, err := bt.PartitionBlock(context.Background(), b, k, make([]int64, b.NumRows)); err == nil || !strings.Contains(err.Error(), "node weights") {
		t.Errorf("balance = inputs with node weights: %v", err)
	}
}

// keepRows returns b with the entries of the rows keep rejects removed
// (the rows stay, empty).
func keepRows(b *graph.CSR, keep func(r int) bool) *graph.CSR {
	out := &graph.CSR{NumRows: b.NumRows, NumCols: b.NumCols, Indptr: make([]int64, b.NumRows+1)}
	for r := 0; r < b.NumRows; r++ {
		if keep(r) {
			out.Idx32 = append(out.Idx32, b.Idx32[b.Indptr[r]:b.Indptr[r+1]]...)
		}
		out.Indptr[r+1] = int64(len(out.Idx32))
	}
	return out
}

func TestBettySquare(t *testing.T) {
	// On a square graph, node i's inputs are its in-neighbours.
	g := gridPlus(20, 20, 20, 2)
	bt := newPart(t, "partitioner.betty-reg")
	parts, err := bt.Partition(context.Background(), g, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q := Quality(g, parts, 4); q.EmptyParts != 0 || q.NodeBalance > 1.05 {
		t.Fatalf("%v", q)
	}
}

func TestBettyValidate(t *testing.T) {
	bt := &BettyREG{MaxHubDegree: -2, MetisOptions: defaultMetisOptions()}
	if _, err := registry.Ready(context.Background(), bt); err == nil || !strings.Contains(err.Error(), "partitioner.betty-reg: max_hub_degree = -2") {
		t.Fatalf("error %v", err)
	}
}

func TestMetisEdgeWeights(t *testing.T) {
	w := []int64{1, 2, 3}
	if got, scaled := metisEdgeWeights(w); scaled || !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("%v %v", got, scaled)
	}
	w = []int64{1 << 31, 1 << 31, 1, 1, 1 << 30, 1 << 30}
	got, scaled := metisEdgeWeights(w)
	var total int64
	for _, x := range got {
		total += int64(x)
		if x < 1 {
			t.Fatalf("weight %d < 1: %v", x, got)
		}
	}
	if !scaled || total > math.MaxInt32 || got[0] != got[1] || got[4] != got[5] || got[0] <= got[4] {
		t.Fatalf("scaled weights %v (total %d)", got, total)
	}
}
