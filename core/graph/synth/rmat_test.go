package synth_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/core/graph/synth"
)

// ncc returns the test accuracy of a nearest-class-centroid classifier on
// feats, with centroids from the train split.
func ncc(d *graph.Dataset, feats []float32) float64 {
	dim, k := d.FeatDim, d.NumClasses
	cent := make([]float64, k*dim)
	cnt := make([]int, k)
	for _, i := range d.Train {
		l := int(d.Labels[i])
		cnt[l]++
		for j := 0; j < dim; j++ {
			cent[l*dim+j] += float64(feats[int(i)*dim+j])
		}
	}
	for l := 0; l < k; l++ {
		for j := 0; j < dim; j++ {
			if cnt[l] > 0 {
				cent[l*dim+j] /= float64(cnt[l])
			}
		}
	}
	correct := 0
	for _, i := range d.Test {
		best, bestD := -1, 0.0
		for l := 0; l < k; l++ {
			if cnt[l] == 0 {
				continue
			}
			var s float64
			for j := 0; j < dim; j++ {
				x := float64(feats[int(i)*dim+j]) - cent[l*dim+j]
				s += x * x
			}
			if best < 0 || s < bestD {
				best, bestD = l, s
			}
		}
		if best == int(d.Labels[i]) {
			correct++
		}
	}
	return float64(correct) / float64(len(d.Test))
}

// aggFeatures returns the mean of the features over every node, its in-
// and its out-neighbours.
func aggFeatures(d *graph.Dataset) []float32 {
	n, dim := d.NumNodes, d.FeatDim
	sum := make([]float64, n*dim)
	cnt := make([]float64, n)
	add := func(to, from int) {
		cnt[to]++
		for j := 0; j < dim; j++ {
			sum[to*dim+j] += float64(d.Features[from*dim+j])
		}
	}
	for i := 0; i < n; i++ {
		add(i, i)
	}
	g := d.Graph
	for r := 0; r < n; r++ {
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			c := int(g.Col(e))
			add(r, c)
			add(c, r)
		}
	}
	out := make([]float32, n*dim)
	for i := range out {
		out[i] = float32(sum[i] / cnt[i/dim])
	}
	return out
}

func TestRMATDeterministic(t *testing.T) {
	o := synth.RMATOptions{Scale: 13, EdgeFactor: 16, FeatDim: 8, NumClasses: 5, Seed: 11}
	gen := func(procs int, o synth.RMATOptions) *graph.Dataset {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		d, err := synth.RMAT(o)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := gen(1, o), gen(4, o)
	if diff := graphtest.SameDataset(a, b); diff != "" || a.Source != b.Source {
		t.Fatalf("same options, different %s (GOMAXPROCS 1 vs 4)", diff)
	}
	if c := gen(2, o); graphtest.SameDataset(a, c) != "" {
		t.Fatal("same options, different datasets")
	}
	o2 := o
	o2.Seed = 12
	c := gen(2, o2)
	if graphtest.SameCSR(a.Graph, c.Graph) || slices.Equal(a.Features, c.Features) || slices.Equal(a.Labels, c.Labels) || slices.Equal(a.Train, c.Train) {
		t.Error("different seeds give the same graph, features, labels or splits")
	}
}

func TestRMATShape(t *testing.T) {
	cases := []synth.RMATOptions{
		{Scale: 1},
		{Scale: 4, EdgeFactor: 1},
		{Scale: 9, EdgeFactor: 3, FeatDim: 7, NumClasses: 2, Seed: 3},
		{Scale: 10, FeatDim: 4, NumClasses: 16},
		{Scale: 8, NumClasses: 3},                         // labels without features
		{Scale: 8, FeatDim: 3},                            // features without labels
		{Scale: 8, FeatDim: 3, NumClasses: 1},             // one class
		{Scale: 8, A: 0.25, B: 0.25, C: 0.25, FeatDim: 2}, // uniform
		{Scale: 8, A: 1, FeatDim: 2},                      // every edge is (0,0) before relabelling
		{Scale: 8, FeatDim: 2, NumClasses: 2, CentroidScale: -1},
	}
	for i, o := range cases {
		t.Run(fmt.Sprintf("%d_%s", i, o.Name()), func(t *testing.T) {
			d, err := synth.RMAT(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			ef := o.EdgeFactor
			if ef == 0 {
				ef = 16
			}
			n := 1 << o.Scale
			if d.NumNodes != n || d.Graph.NumRows != n || d.Graph.NNZ() != int64(n*ef) {
				t.Errorf("n=%d nnz=%d, want %d and %d", d.NumNodes, d.Graph.NNZ(), n, n*ef)
			}
			if !graphtest.SortedRows(d.Graph, false) {
				t.Error("rows not sorted")
			}
			if o.A == 1 {
				// Every edge is the same self loop.
				if st := d.Graph.DegreeStats(); st.In.Max != d.Graph.NNZ() || st.Out.Max != d.Graph.NNZ() {
					t.Errorf("a=1: in max %d out max %d of %d edges", st.In.Max, st.Out.Max, d.Graph.NNZ())
				}
			}
			if d.Name != o.Name() || d.Source != o.Name() || !strings.Contains(d.Citation, "R-MAT") {
				t.Errorf("name %q source %q citation %q", d.Name, d.Source, d.Citation)
			}
			if d.FeatDim != o.FeatDim || len(d.Features) != n*o.FeatDim || (o.FeatDim == 0) != (d.Features == nil) {
				t.Errorf("features: dim %d, %d values", d.FeatDim, len(d.Features))
			}
			if o.NumClasses == 0 {
				if d.Labels != nil || d.NumClasses != 0 || d.Train != nil || d.Valid != nil || d.Test != nil {
					t.Error("labels or splits without classes")
				}
				return
			}
			if d.NumClasses != o.NumClasses || len(d.Labels) != n {
				t.Fatalf("classes %d, %d labels", d.NumClasses, len(d.Labels))
			}
			// Labels are quantile bins: every class about n/classes nodes.
			count := make([]int, d.NumClasses)
			for _, l := range d.Labels {
				count[l]++
			}
			for k, c := range count {
				if want := n / d.NumClasses; c < want/2 || c > 2*want+1 {
					t.Errorf("class %d has %d nodes, want about %d", k, c, want)
				}
			}
		})
	}
}

// TestRMATSkew checks that Graph500 parameters give a heavy-tailed degree
// distribution while uniform quadrants (Erdős–Rényi-like) do not.
func TestRMATSkew(t *testing.T) {
	ratio := func(o synth.RMATOptions) float64 {
		d, err := synth.RMAT(o)
		if err != nil {
			t.Fatal(err)
		}
		in, out := graph.Degrees(d.Graph)
		var maxDeg, sum int64
		for i := range in {
			deg := int64(in[i]) + int64(out[i])
			maxDeg = max(maxDeg, deg)
			sum += deg
		}
		return float64(maxDeg) / (float64(sum) / float64(len(in)))
	}
	for seed := uint64(0); seed < 3; seed++ {
		g500 := ratio(synth.RMATOptions{Scale: 11, Seed: seed})
		er := ratio(synth.RMATOptions{Scale: 11, Seed: seed, A: 0.25, B: 0.25, C: 0.25})
		if g500 < 10 {
			t.Errorf("seed %d: Graph500 max/mean degree %.1f, want a heavy tail (> 10)", seed, g500)
		}
		if er > 3 {
			t.Errorf("seed %d: uniform max/mean degree %.1f, want < 3", seed, er)
		}
	}
}

// TestRMATLearnable checks that a nearest-class-centroid classifier on
// the features, trained on the train split, beats chance on the test
// split, and does better on neighbour-averaged features (the labels
// depend on the neighbourhood).
func TestRMATLearnable(t *testing.T) {
	cases := []struct {
		spec      string
		opts      synth.RMATOptions
		minRaw    float64
		aggBetter bool
	}{
		{"4 classes", synth.RMATOptions{Scale: 12, FeatDim: 16, NumClasses: 4}, 0.35, true},
		{"4 classes seed 1", synth.RMATOptions{Scale: 12, FeatDim: 16, NumClasses: 4, Seed: 1}, 0.35, true},
		{"4 classes half train", synth.RMATOptions{Scale: 12, FeatDim: 16, NumClasses: 4, Seed: 2, TrainFrac: .5, ValidFrac: .1, TestFrac: .4}, 0.38, true},
		{"rmat-12 defaults", synth.RMATOptions{}, 0.16, false},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			o := c.opts
			if c.spec == "rmat-12 defaults" {
				var err error
				if o, err = synth.ParseRMATName("rmat-12"); err != nil {
					t.Fatal(err)
				}
			}
			d, err := synth.RMAT(o)
			if err != nil {
				t.Fatal(err)
			}
			chance := 1 / float64(d.NumClasses)
			raw := ncc(d, d.Features)
			agg := ncc(d, aggFeatures(d))
			t.Logf("chance %.3f, raw features %.3f, neighbour-averaged %.3f", chance, raw, agg)
			if raw < c.minRaw || raw < chance+0.03 {
				t.Errorf("raw accuracy %.3f, want >= %.3f (chance %.3f)", raw, c.minRaw, chance)
			}
			if c.aggBetter && agg < raw+0.05 {
				t.Errorf("neighbour-averaged accuracy %.3f is not clearly above raw %.3f", agg, raw)
			}
		})
	}
	// Without centroids the node's own features carry much less signal.
	o := synth.RMATOptions{Scale: 12, FeatDim: 16, NumClasses: 4, CentroidScale: -1}
	d, err := synth.RMAT(o)
	if err != nil {
		t.Fatal(err)
	}
	with, err := synth.RMAT(synth.RMATOptions{Scale: 12, FeatDim: 16, NumClasses: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Labels, with.Labels) {
		t.Error("CentroidScale changed the labels")
	}
	if a, b := ncc(d, d.Features), ncc(with, with.Features); a >= b {
		t.Errorf("no centroids: accuracy %.3f, not below %.3f with centroids", a, b)
	}
}

func TestRMATSplits(t *testing.T) {
	cases := []struct {
		o                  synth.RMATOptions
		train, valid, test float64
	}{
		{synth.RMATOptions{Scale: 12, NumClasses: 4}, .1, .1, .8},
		{synth.RMATOptions{Scale: 12, NumClasses: 4, Seed: 5, TrainFrac: .5, ValidFrac: .25, TestFrac: .25}, .5, .25, .25},
		{synth.RMATOptions{Scale: 12, NumClasses: 4, TrainFrac: .3, TestFrac: .2}, .3, 0, .2},
		{synth.RMATOptions{Scale: 12, NumClasses: 4, TrainFrac: 1}, 1, 0, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%g/%g/%g", c.train, c.valid, c.test), func(t *testing.T) {
			d, err := synth.RMAT(c.o)
			if err != nil {
				t.Fatal(err)
			}
			n := float64(d.NumNodes)
			owner := map[int32]string{}
			for i, s := range [][]int32{d.Train, d.Valid, d.Test} {
				if s == nil {
					t.Errorf("%s split is nil", graph.SplitName(i))
				}
				if !slices.IsSorted(s) {
					t.Errorf("%s split not sorted", graph.SplitName(i))
				}
				for _, id := range s {
					if o, dup := owner[id]; dup {
						t.Fatalf("node %d in %s and %s", id, o, graph.SplitName(i))
					}
					owner[id] = graph.SplitName(i)
				}
				frac := []float64{c.train, c.valid, c.test}[i]
				// Binomial: within 5 standard deviations.
				sd := math.Sqrt(n * frac * (1 - frac))
				if got := float64(len(s)); math.Abs(got-frac*n) > 5*sd+1 {
					t.Errorf("%s split has %d nodes, want about %.0f", graph.SplitName(i), len(s), frac*n)
				}
			}
			if err := d.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRMATBadOptions(t *testing.T) {
	cases := []struct {
		o    synth.RMATOptions
		want string
	}{
		{synth.RMATOptions{Scale: 0}, "scale 0 outside [1,30]"},
		{synth.RMATOptions{Scale: 31}, "scale 31"},
		{synth.RMATOptions{Scale: 4, EdgeFactor: -1}, "edge factor -1"},
		{synth.RMATOptions{Scale: 4, EdgeFactor: 5000}, "edge factor 5000"},
		{synth.RMATOptions{Scale: 30, EdgeFactor: 32}, "too many"},
		{synth.RMATOptions{Scale: 4, A: 0.6, B: 0.3, C: 0.2}, "quadrant probabilities"},
		{synth.RMATOptions{Scale: 4, A: -0.1, B: 0.5}, "quadrant probabilities"},
		{synth.RMATOptions{Scale: 4, A: math.NaN()}, "quadrant probabilities"},
		{synth.RMATOptions{Scale: 4, FeatDim: -1}, "feature dimension -1"},
		{synth.RMATOptions{Scale: 4, NumClasses: -2}, "class count -2"},
		{synth.RMATOptions{Scale: 4, NumClasses: 2, TrainFrac: .6, ValidFrac: .6}, "split fractions"},
		{synth.RMATOptions{Scale: 4, NumClasses: 2, TestFrac: -.1}, "split fractions"},
		{synth.RMATOptions{Scale: 4, CentroidScale: math.Inf(1)}, "centroid scale"},
	}
	for _, c := range cases {
		d, err := synth.RMAT(c.o)
		if d != nil {
			t.Errorf("%+v: dataset returned with an error", c.o)
		}
		graphtest.WantErr(t, err, graph.ErrRange, "rmat: ", c.want)
	}
}

func TestParseRMATName(t *testing.T) {
	def := synth.RMATOptions{EdgeFactor: 16, FeatDim: 64, NumClasses: 8}
	with := func(f func(o *synth.RMATOptions)) synth.RMATOptions {
		o := def
		f(&o)
		return o
	}
	good := []struct {
		spec string
		want synth.RMATOptions
	}{
		{"rmat-16", with(func(o *synth.RMATOptions) { o.Scale = 16 })},
		{"rmat-1", with(func(o *synth.RMATOptions) { o.Scale = 1 })},
		{"rmat-10-8", with(func(o *synth.RMATOptions) { o.Scale, o.EdgeFactor = 10, 8 })},
		{"rmat-10-8-0", with(func(o *synth.RMATOptions) { o.Scale, o.EdgeFactor, o.FeatDim = 10, 8, 0 })},
		{"rmat-10-8-32-0", with(func(o *synth.RMATOptions) { o.Scale, o.EdgeFactor, o.FeatDim, o.NumClasses = 10, 8, 32, 0 })},
		{"rmat-16-16-64-8-0", with(func(o *synth.RMATOptions) { o.Scale = 16 })},
		{"rmat-5-2-3-4-18446744073709551615", synth.RMATOptions{Scale: 5, EdgeFactor: 2, FeatDim: 3, NumClasses: 4, Seed: math.MaxUint64}},
	}
	for _, c := range good {
		o, err := synth.ParseRMATName(c.spec)
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		if o != c.want {
			t.Errorf("%s: %+v, want %+v", c.spec, o, c.want)
		}
		// Name is canonical and parses back to the same options.
		back, err := synth.ParseRMATName(o.Name())
		if err != nil || back != o {
			t.Errorf("%s: Name %q parses to %+v, %v", c.spec, o.Name(), back, err)
		}
	}
	if got := (synth.RMATOptions{Scale: 3}).Name(); got != "rmat-3-16-0-0-0" {
		t.Errorf("Name of zero options %q", got)
	}
	bad := []struct {
		spec string
		kind error
		want string
	}{
		{"rmat-", graph.ErrFormat, "want rmat-<scale>"},
		{"rmat", graph.ErrFormat, "want rmat-<scale>"},
		{"graph-10", graph.ErrFormat, "want rmat-<scale>"},
		{"rmat-x", graph.ErrFormat, `scale "x" is not a non-negative integer`},
		{"rmat-10-", graph.ErrFormat, `edgefactor "" is not`},
		{"rmat--10", graph.ErrFormat, `scale ""`},
		{"rmat-10--8", graph.ErrFormat, `edgefactor ""`},
		{"rmat-10-8-a", graph.ErrFormat, `feat "a"`},
		{"rmat-10-8-4-c", graph.ErrFormat, `classes "c"`},
		{"rmat-10-8-4-2-", graph.ErrFormat, `seed "" is not`},
		{"rmat-10-8-4-2--1", graph.ErrFormat, "6 fields"},
		{"rmat-10-8-4-2-x", graph.ErrFormat, `seed "x"`},
		{"rmat-10-8-4-2-1-9", graph.ErrFormat, "6 fields, at most 5"},
		{"rmat-1.5", graph.ErrFormat, `scale "1.5"`},
		{"rmat-0", graph.ErrRange, "scale 0 outside"},
		{"rmat-31", graph.ErrRange, "scale 31 outside"},
		{"rmat-10-0", graph.ErrRange, "edge factor 0"},
		{"rmat-10-9999", graph.ErrRange, "edge factor 9999"},
		{"rmat-10-8-99999", graph.ErrRange, "feature dimension 99999"},
		{"rmat-10-8-4-99999", graph.ErrRange, "class count 99999"},
	}
	for _, c := range bad {
		_, err := synth.ParseRMATName(c.spec)
		graphtest.WantErr(t, err, c.kind, fmt.Sprintf("%q", c.spec), c.want)
		if c.kind == graph.ErrFormat && !strings.Contains(fmt.Sprint(err), "e.g. rmat-16-16-64-8-0") {
			t.Errorf("%s: error %v does not show the accepted form", c.spec, err)
		}
		if c.kind == graph.ErrRange && errors.Is(err, graph.ErrFormat) {
			t.Errorf("%s: range error %v also wraps ErrFormat", c.spec, err)
		}
	}
}

// TestRMATBudget: format.rmat refuses a spec whose graph would not fit
// the memory budget before generating anything.
func TestRMATBudget(t *testing.T) {
	_, err := graph.OpenContext(graph.WithMaxMemory(context.Background(), 1<<30), "rmat-24-16-1000-8-0")
	graphtest.WantErr(t, err, graph.ErrRange, "generating the graph would need", "memory budget of 1.0 GiB")
}
