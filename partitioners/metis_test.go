package partitioners

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/registry"
)

// gridPlus returns a w x h 2D grid (edges stored in one direction) plus
// extra seeded random edges: a graph with a clear low-cut structure.
func gridPlus(w, h, extra int, seed uint64) *graph.CSR {
	n := w * h
	var edges [][2]int64
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := int64(y*w + x)
			if x+1 < w {
				edges = append(edges, [2]int64{v, v + 1})
			}
			if y+1 < h {
				edges = append(edges, [2]int64{v, v + int64(w)})
			}
		}
	}
	rng := splitmix64(seed)
	for i := 0; i < extra; i++ {
		edges = append(edges, [2]int64{int64(rng.below(uint64(n))), int64(rng.below(uint64(n)))})
	}
	return graph.FromEdges(n, edges)
}

// undirectedCut is METIS's edge cut: undirected edges of the symmetrised
// graph (without self loops) whose endpoints lie in different parts.
func undirectedCut(g *graph.CSR, parts []int32, k int) int64 {
	return Quality(graph.Symmetrize(g), parts, k).EdgeCut / 2
}

// writeMetisGraph writes the symmetrised g in METIS's graph-file format.
func writeMetisGraph(t *testing.T, path string, g *graph.CSR) {
	t.Helper()
	s := graph.Symmetrize(g)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "%d %d\n", s.NumRows, s.NNZ()/2)
	for i := 0; i < s.NumRows; i++ {
		for e := s.Indptr[i]; e < s.Indptr[i+1]; e++ {
			if e > s.Indptr[i] {
				w.WriteByte(' ')
			}
			w.WriteString(strconv.FormatInt(s.Col(e)+1, 10))
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readParts(t *testing.T, path string, n int) []int32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != n {
		t.Fatalf("%s: %d parts for %d nodes", path, len(fields), n)
	}
	parts := make([]int32, n)
	for i, f := range fields {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = int32(p)
	}
	return parts
}

// TestMetisGpmetisParity checks that partitioner.metis computes what the
// gpmetis command of Debian's `metis` package computes with the same seed
// and options.
func TestMetisGpmetisParity(t *testing.T) {
	gp, err := exec.LookPath("gpmetis")
	if err != nil {
		t.Skip("gpmetis not found: install Debian's metis package (apt-get install -y metis; it is in the Makefile's APT_PKGS) to run the METIS parity test")
	}
	g := gridPlus(45, 45, 200, 3) // 2025 nodes
	dir := t.TempDir()
	file := filepath.Join(dir, "graph.txt")
	writeMetisGraph(t, file, g)
	tests := []struct {
		ptype, method string
		k             int
		seed          int64
		ufactor       int
	}{
		{"kway", "kway", 2, 0, 0},
		{"kway", "kway", 8, 1, 0},
		{"kway", "kway", 16, 42, 0},
		{"kway", "kway", 8, 7, 100},
		{"rb", "recursive", 8, 5, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/k=%d/seed=%d/ufactor=%d", tt.ptype, tt.k, tt.seed, tt.ufactor), func(t *testing.T) {
			args := []string{"-seed=" + strconv.FormatInt(tt.seed, 10), "-ptype=" + tt.ptype}
			if tt.ufactor > 0 {
				args = append(args, "-ufactor="+strconv.Itoa(tt.ufactor))
			}
			args = append(args, file, strconv.Itoa(tt.k))
			if out, err := exec.Command(gp, args...).CombinedOutput(); err != nil {
				t.Fatalf("gpmetis %v: %v\n%s", args, err, out)
			}
			want := readParts(t, fmt.Sprintf("%s.part.%d", file, tt.k), g.NumRows)
			m := &Metis{MetisOptions: defaultMetisOptions()}
			m.Method, m.Seed, m.Ufactor = tt.method, tt.seed, tt.ufactor
			got, err := m.Partition(context.Background(), g, tt.k, nil)
			if err != nil {
				t.Fatal(err)
			}
			gc, wc := undirectedCut(g, got, tt.k), undirectedCut(g, want, tt.k)
			t.Logf("edge cut: ours %d, gpmetis %d; identical partitions: %v", gc, wc, slices.Equal(got, want))
			if gc != wc {
				t.Fatalf("edge cut %d, gpmetis %d", gc, wc)
			}
		})
	}
}

func TestMetisQuality(t *testing.T) {
	g := gridPlus(40, 40, 0, 1)
	const k = 4
	for _, method := range []string{"kway", "recursive"} {
		m := &Metis{MetisOptions: defaultMetisOptions()}
		m.Method = method
		parts, err := m.Partition(context.Background(), g, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		rnd, _ := (&Random{Seed: 1}).Partition(context.Background(), g, k, nil)
		q, qr := Quality(g, parts, k), Quality(g, rnd, k)
		// A 40x40 grid cut in 4 needs about 80 cut edges; random cuts 3/4 of 3120.
		if q.EdgeCut > 200 || q.EdgeCut*5 > qr.EdgeCut {
			t.Fatalf("%s: cut %d (random %d)", method, q.EdgeCut, qr.EdgeCut)
		}
		if q.NodeBalance > 1.04 || q.EmptyParts != 0 {
			t.Fatalf("%s: %v", method, q)
		}
	}
}

func TestMetisNodeWeights(t *testing.T) {
	g := gridPlus(30, 30, 0, 1)
	n := g.NumRows
	// The first row of the grid weighs 30 per node: 900 of a total of 1770.
	w := make([]int64, n)
	for i := range w {
		w[i] = 1
		if i < 30 {
			w[i] = 30
		}
	}
	const k = 3
	parts, err := (&Metis{MetisOptions: defaultMetisOptions()}).Partition(context.Background(), g, k, w)
	if err != nil {
		t.Fatal(err)
	}
	load := make([]int64, k)
	for i, p := range parts {
		load[p] += w[i]
	}
	if mx := slices.Max(load); float64(mx) > 1.1*1770/3 {
		t.Fatalf("weighted loads %v are not balanced", load)
	}
	if c := counts(parts, k); slices.Max(c) < 2*slices.Min(c) {
		t.Fatalf("node counts %v should be unbalanced under these weights", c)
	}
}

// TestMetisInputs covers the graphs METIS itself cannot take as they are.
func TestMetisInputs(t *testing.T) {
	pairs := func(c int) *graph.CSR { // c disconnected components of 2 nodes
		var e [][2]int64
		for i := 0; i < c; i++ {
			e = append(e, [2]int64{int64(2 * i), int64(2*i + 1)})
		}
		return graph.FromEdges(2*c, e)
	}
	path := gridPlus(30, 1, 0, 0)
	loops := graph.FromEdges(6, [][2]int64{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}})
	tests := []struct {
		name    string
		g       *graph.CSR
		k       int
		method  string
		maxCut  int64 // -1: do not check
		sameAs  *graph.CSR
		wantErr string
	}{
		{"k=1", path, 1, "kway", 0, nil, ""},
		{"k=n path", path, 30, "kway", -1, nil, ""},
		{"k=n recursive", path, 30, "recursive", -1, nil, ""},
		// METIS k-way keeps components whole and leaves parts empty when k
		// exceeds the components: those parts get filled.
		{"k > components", pairs(10), 15, "kway", 5, nil, ""},
		{"k = components", pairs(10), 10, "kway", 0, nil, ""},
		{"k > components recursive", pairs(10), 15, "recursive", 5, nil, ""},
		{"edgeless", graph.FromEdges(10, nil), 3, "kway", 0, nil, ""},
		{"self loops only", loops, 3, "kway", 0, nil, ""},
		{"self loops dropped", graph.FromEdges(30, append(edgesOf(path), [2]int64{3, 3}, [2]int64{7, 7})), 3, "kway", -1, path, ""},
		{"duplicates dropped", graph.FromEdges(30, append(edgesOf(path), edgesOf(path)...)), 3, "kway", -1, path, ""},
		{"direction ignored", graph.FromEdges(30, reversed(edgesOf(path))), 3, "kway", -1, path, ""},
		{"empty graph", graph.FromEdges(0, nil), 1, "kway", 0, nil, "k = 1 parts for a graph of 0 nodes"},
		{"non-square", &graph.CSR{NumRows: 2, NumCols: 3, Indptr: []int64{0, 1, 2}, Idx32: []int32{2, 0}}, 2, "kway", 0, nil, "2 x 3: METIS partitions square graphs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Metis{MetisOptions: defaultMetisOptions()}
			m.Method = tt.method
			parts, err := m.Partition(context.Background(), tt.g, tt.k, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for p, c := range counts(parts, tt.k) {
				if c == 0 {
					t.Fatalf("part %d is empty: %v", p, parts)
				}
			}
			if cut := undirectedCut(tt.g, parts, tt.k); tt.maxCut >= 0 && cut > tt.maxCut {
				t.Fatalf("cut %d > %d: %v", cut, tt.maxCut, parts)
			}
			if tt.sameAs != nil {
				want, err := m.Partition(context.Background(), tt.sameAs, tt.k, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(parts, want) {
					t.Fatalf("parts %v, want those of the clean graph %v", parts, want)
				}
			}
		})
	}
}

func edgesOf(g *graph.CSR) [][2]int64 {
	var e [][2]int64
	for i := 0; i < g.NumRows; i++ {
		for k := g.Indptr[i]; k < g.Indptr[i+1]; k++ {
			e = append(e, [2]int64{g.Col(k), int64(i)})
		}
	}
	return e
}

func reversed(e [][2]int64) [][2]int64 {
	out := make([][2]int64, len(e))
	for i, x := range e {
		out[i] = [2]int64{x[1], x[0]}
	}
	return out
}

func TestMetisErrors(t *testing.T) {
	g := gridPlus(4, 4, 0, 0)
	disconnected := graph.FromEdges(4, [][2]int64{{0, 1}, {2, 3}})
	huge := make([]int64, 16)
	huge[3] = 1 << 40
	big := slices.Repeat([]int64{1 << 30}, 16)
	tests := []struct {
		name    string
		g       *graph.CSR
		set     func(*MetisOptions)
		weights []int64
		want    string
	}{
		{"bad method", g, func(o *MetisOptions) { o.Method = "multilevel" }, nil, `method = "multilevel"`},
		{"bad objective", g, func(o *MetisOptions) { o.Objective = "edges" }, nil, `objective = "edges"`},
		{"vol recursive", g, func(o *MetisOptions) { o.Method, o.Objective = "recursive", "vol" }, nil, `needs method = "kway"`},
		{"contig recursive", g, func(o *MetisOptions) { o.Method, o.Contig = "recursive", true }, nil, "contig and minconn need"},
		{"seed overflow", g, func(o *MetisOptions) { o.Seed = 1 << 40 }, nil, "32-bit idx_t"},
		{"negative ufactor", g, func(o *MetisOptions) { o.Ufactor = -1 }, nil, "ufactor = -1"},
		{"negative ncuts", g, func(o *MetisOptions) { o.Ncuts = -2 }, nil, "ncuts = -2"},
		{"weight overflow", g, nil, huge, "node 3 has weight 1099511627776"},
		{"total weight overflow", g, nil, big, "total node weight exceeds"},
		{"contig disconnected", disconnected, func(o *MetisOptions) { o.Contig = true }, nil, "contig = true needs a connected graph; this one has 2 connected components"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Metis{MetisOptions: defaultMetisOptions()}
			if tt.set != nil {
				tt.set(&m.MetisOptions)
			}
			// Options are checked once, by the lifecycle; the
			// arguments on every call.
			_, err := registry.Ready(context.Background(), m)
			if err == nil {
				_, err = m.Partition(context.Background(), tt.g, 2, tt.weights)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "partitioner.metis: ") {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestMetisOptionsRun(t *testing.T) {
	g := gridPlus(20, 20, 30, 9)
	for _, o := range []MetisOptions{
		{Method: "kway", Objective: "vol"},
		{Method: "kway", Objective: "cut", Contig: true, MinConn: true},
		{Method: "kway", Objective: "cut", Ncuts: 3, Ufactor: 200},
		{Method: "recursive", Objective: "cut", Ncuts: 2},
	} {
		var stages []string
		o.Progress = func(s string) { stages = append(stages, s) }
		parts, err := (&Metis{MetisOptions: o}).Partition(context.Background(), g, 5, nil)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if q := Quality(g, parts, 5); q.EmptyParts != 0 || q.EdgeCut > 200 {
			t.Fatalf("%+v: %v", o, q)
		}
		if !slices.Equal(stages, []string{"symmetrize", "metis", "done"}) {
			t.Fatalf("progress stages %v", stages)
		}
	}
}

func TestMetisSizeLimits(t *testing.T) {
	if err := checkMetisSize("x", math.MaxInt32, 0); err == nil || !strings.Contains(err.Error(), "32-bit idx_t") {
		t.Fatalf("n = 2^31-1: %v", err)
	}
	if err := checkMetisSize("x", 1000, 1<<31); err == nil || !strings.Contains(err.Error(), "adjacency entries") {
		t.Fatalf("nnz = 2^31: %v", err)
	}
	if err := checkMetisSize("x", math.MaxInt32-1, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	wide := &graph.CSR{NumRows: 3, NumCols: 3, Indptr: []int64{0, 1, 2, 2}, Idx64: []int64{1, 0}}
	parts, err := (&Metis{MetisOptions: defaultMetisOptions()}).Partition(context.Background(), wide, 2, nil)
	if err != nil || len(parts) != 3 {
		t.Fatalf("64-bit ids of a small graph: %v %v", parts, err)
	}
}

func TestFillEmptyParts(t *testing.T) {
	// Path 0-1-2-3-4, all in part 0; parts 1 and 2 empty.
	mg, err := undirectedMetisGraph("x", gridPlus(5, 1, 0, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	parts := []int32{0, 0, 0, 0, 0}
	fillEmptyParts(mg, parts, 3)
	// Node 0 has the fewest neighbours inside part 0 and moves first; then
	// nodes 1 and 4 both have one, and the lower id moves.
	if want := []int32{1, 2, 0, 0, 0}; !slices.Equal(parts, want) {
		t.Fatalf("parts %v, want %v", parts, want)
	}
}
