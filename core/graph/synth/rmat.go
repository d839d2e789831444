package synth

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"strata/core/graph"
)

// RMATOptions configures the R-MAT generator. Zero values of EdgeFactor,
// A/B/C and the split fractions select the defaults.
type RMATOptions struct {
	Scale      int     // log2 of the node count (1..30)
	EdgeFactor int     // average degree: N*EdgeFactor directed edges are generated (default 16)
	A, B, C    float64 // quadrant probabilities (default Graph500: .57, .19, .19; D = 1-A-B-C)
	Seed       uint64
	FeatDim    int // 0: no features
	NumClasses int // 0: no labels, no splits

	// Split fractions of the nodes (default .1/.1/.8 when all three are 0).
	TrainFrac, ValidFrac, TestFrac float64

	// CentroidScale is the norm of the class centroids added to the unit
	// Gaussian node features: centroids lie about CentroidScale·√2 apart,
	// in units of the per-dimension noise. It sets how much the features
	// alone reveal the class (default 0.5; negative for no centroids).
	CentroidScale float64
}

// Defaults of the R-MAT spec "rmat-<scale>".
const (
	rmatDefaultEdgeFactor = 16
	rmatDefaultFeatDim    = 64
	rmatDefaultClasses    = 8
)

// ParseRMATName parses "rmat-<scale>[-<edgefactor>[-<feat>[-<classes>[-<seed>]]]]",
// e.g. "rmat-16-16-64-8-0". Missing fields take the defaults (edge factor
// 16, 64 features, 8 classes, seed 0).
func ParseRMATName(spec string) (RMATOptions, error) {
	const form = "want rmat-<scale>[-<edgefactor>-<feat>-<classes>-<seed>], e.g. rmat-16-16-64-8-0"
	o := RMATOptions{EdgeFactor: rmatDefaultEdgeFactor, FeatDim: rmatDefaultFeatDim, NumClasses: rmatDefaultClasses}
	rest, ok := strings.CutPrefix(spec, "rmat-")
	if !ok || rest == "" {
		return o, fmt.Errorf("rmat spec %q: %s: %w", spec, form, graph.ErrFormat)
	}
	fields := strings.Split(rest, "-")
	if len(fields) > 5 {
		return o, fmt.Errorf("rmat spec %q: %d fields, at most 5; %s: %w", spec, len(fields), form, graph.ErrFormat)
	}
	names := [5]string{"scale", "edgefactor", "feat", "classes", "seed"}
	for i, f := range fields {
		if i == 4 {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return o, fmt.Errorf("rmat spec %q: seed %q is not a non-negative integer; %s: %w", spec, f, form, graph.ErrFormat)
			}
			o.Seed = v
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 {
			return o, fmt.Errorf("rmat spec %q: %s %q is not a non-negative integer; %s: %w", spec, names[i], f, form, graph.ErrFormat)
		}
		switch i {
		case 0:
			o.Scale = v
		case 1:
			if v == 0 { // RMATOptions reads 0 as the default: reject it here
				return o, fmt.Errorf("rmat spec %q: edge factor 0 outside [1,4096]: %w", spec, graph.ErrRange)
			}
			o.EdgeFactor = v
		case 2:
			o.FeatDim = v
		case 3:
			o.NumClasses = v
		}
	}
	if err := o.withDefaults().check(); err != nil {
		return o, fmt.Errorf("rmat spec %q: %w", spec, err)
	}
	return o, nil
}

// Name returns the canonical spec of the options, "rmat-S-EF-F-C-seed".
func (o RMATOptions) Name() string {
	o = o.withDefaults()
	return fmt.Sprintf("rmat-%d-%d-%d-%d-%d", o.Scale, o.EdgeFactor, o.FeatDim, o.NumClasses, o.Seed)
}

// withDefaults fills zero fields with their defaults.
func (o RMATOptions) withDefaults() RMATOptions {
	if o.EdgeFactor == 0 {
		o.EdgeFactor = rmatDefaultEdgeFactor
	}
	if o.A == 0 && o.B == 0 && o.C == 0 {
		o.A, o.B, o.C = 0.57, 0.19, 0.19
	}
	if o.TrainFrac == 0 && o.ValidFrac == 0 && o.TestFrac == 0 {
		o.TrainFrac, o.ValidFrac, o.TestFrac = 0.1, 0.1, 0.8
	}
	if o.CentroidScale == 0 {
		o.CentroidScale = 0.5
	}
	return o
}

// check validates options that have their defaults filled in.
func (o RMATOptions) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf(format+": %w", append(args, graph.ErrRange)...)
	}
	switch {
	case o.Scale < 1 || o.Scale > 30:
		return bad("scale %d outside [1,30]", o.Scale)
	case o.EdgeFactor < 1 || o.EdgeFactor > 1<<12:
		return bad("edge factor %d outside [1,4096]", o.EdgeFactor)
	case int64(o.EdgeFactor)<<o.Scale > 1<<34:
		return bad("%d edges is too many", int64(o.EdgeFactor)<<o.Scale)
	case o.A < 0 || o.B < 0 || o.C < 0 || o.A+o.B+o.C > 1+1e-9 || math.IsNaN(o.A+o.B+o.C):
		return bad("quadrant probabilities a=%g b=%g c=%g must be >= 0 with a+b+c <= 1", o.A, o.B, o.C)
	case o.FeatDim < 0 || o.FeatDim > 1<<16:
		return bad("feature dimension %d outside [0,65536]", o.FeatDim)
	case int64(o.FeatDim)<<o.Scale > graph.MaxFeatureValues:
		return bad("%d nodes x %d features is too large", 1<<o.Scale, o.FeatDim)
	case o.NumClasses < 0 || o.NumClasses > 1<<16:
		return bad("class count %d outside [0,65536]", o.NumClasses)
	case o.TrainFrac < 0 || o.ValidFrac < 0 || o.TestFrac < 0 || o.TrainFrac+o.ValidFrac+o.TestFrac > 1+1e-9:
		return bad("split fractions %g/%g/%g must be >= 0 and sum to at most 1", o.TrainFrac, o.ValidFrac, o.TestFrac)
	case math.IsNaN(o.CentroidScale) || math.IsInf(o.CentroidScale, 0):
		return bad("centroid scale %g is not finite", o.CentroidScale)
	}
	return nil
}

// rmatChunk is the number of edges generated from one RNG stream.
const rmatChunk = 1 << 16

// RMAT generates a Graph500-style R-MAT graph with 2^Scale nodes and
// 2^Scale*EdgeFactor directed edges (duplicates and self loops kept, as
// generated; node ids randomly permuted so that degree does not follow the
// id), with learnable labels and features:
//
//   - every node draws a unit Gaussian latent vector z (its features
//     before the class signal) and projects it on a random direction w;
//   - its class is the quantile bin (NumClasses equal-size bins) of the
//     mean of z·w over the node and its in- and out-neighbours, so the
//     label is a linear function of neighbour-aggregated features: a GNN
//     can learn it, an MLP that sees one node cannot;
//   - the features are z + centroid[class], with small random class
//     centroids (CentroidScale), so the features alone carry some signal.
//
// The output depends only on the options, not on GOMAXPROCS.
func RMAT(opts RMATOptions) (*graph.Dataset, error) {
	o := opts.withDefaults()
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("rmat: %w", err)
	}
	n := 1 << o.Scale
	m := int64(n) * int64(o.EdgeFactor)
	g := rmatGraph(o, n, m)
	d := &graph.Dataset{
		Name: o.Name(), NumNodes: n, Graph: g, Source: o.Name(),
		Citation: `Chakrabarti, Zhan, Faloutsos, "R-MAT: A Recursive Model for Graph Mining", SDM 2004; Graph500 benchmark (graph500.org), parameters a=.57 b=.19 c=.19`,
	}
	d.Labels, d.Features = rmatLabelsFeatures(o, g)
	if o.NumClasses > 0 {
		d.NumClasses = o.NumClasses
		d.Train, d.Valid, d.Test = rmatSplits(o, n)
	}
	if o.FeatDim > 0 {
		d.FeatDim = o.FeatDim
	}
	return d, nil
}

// rmatGraph generates the edges in parallel chunks and groups them by
// destination, with sorted rows.
func rmatGraph(o RMATOptions, n int, m int64) *graph.CSR {
	perm := newIDPerm(o.Seed, o.Scale)
	// Quadrant thresholds on 16-bit uniform draws (four levels per word).
	ta := uint64(math.Round(o.A * (1 << 16)))
	tab := uint64(math.Round((o.A + o.B) * (1 << 16)))
	tabc := uint64(math.Round((o.A + o.B + o.C) * (1 << 16)))
	src := make([]int32, m)
	dst := make([]int32, m)
	chunks := int((m + rmatChunk - 1) / rmatChunk)
	graph.ParallelFor(chunks, 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			r := newRNG(o.Seed, streamEdges, uint64(c))
			end := min(int64(c+1)*rmatChunk, m)
			for e := int64(c) * rmatChunk; e < end; e++ {
				var row, col, word uint64
				for lvl := 0; lvl < o.Scale; lvl++ {
					if lvl&3 == 0 {
						word = r.next()
					}
					u := word & 0xffff
					word >>= 16
					// Branch-free quadrant choice: a (0,0), b (0,1), c (1,0), d (1,1).
					var rb, cb uint64
					if u >= tab {
						rb = 1
					}
					if u >= ta {
						cb = 1
					}
					if u >= tab {
						cb ^= 1
					}
					if u >= tabc {
						cb ^= 1
					}
					row = row<<1 | rb
					col = col<<1 | cb
				}
				src[e], dst[e] = int32(perm.apply(row)), int32(perm.apply(col))
			}
		}
	})
	indptr, cols := graph.GroupEdges(n, dst, src)
	graph.SortRows(indptr, cols)
	return graph.MakeCSR(n, n, indptr, cols)
}

// rmatLabelsFeatures draws the latent features, derives the labels from
// the neighbourhood means of their projections and adds the class
// centroids. It returns nil labels without classes and nil features
// without FeatDim.
func rmatLabelsFeatures(o RMATOptions, g *graph.CSR) ([]int32, []float32) {
	n, dim, classes := g.NumRows, o.FeatDim, o.NumClasses
	if classes == 0 && dim == 0 {
		return nil, nil
	}
	var feats []float32
	u := make([]float64, n)
	if dim > 0 {
		wd := make([]float64, dim)
		r := newRNG(o.Seed, streamProjection, 0)
		var norm float64
		for j := range wd {
			wd[j] = r.normal()
			norm += wd[j] * wd[j]
		}
		w := make([]float32, dim)
		for j := range w {
			w[j] = float32(wd[j] / math.Sqrt(norm))
		}
		feats = make([]float32, n*dim)
		graph.ParallelFor(n, 1<<10, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				r := newRNG(o.Seed, streamFeatures, uint64(i))
				row := feats[i*dim : (i+1)*dim]
				// Four partial sums in a fixed order: fast and deterministic.
				var acc [4]float32
				for j := range row {
					z := r.fastNormal()
					row[j] = z
					acc[j&3] += z * w[j]
				}
				u[i] = float64(acc[0]) + float64(acc[1]) + float64(acc[2]) + float64(acc[3])
			}
		})
	} else {
		graph.ParallelFor(n, 1<<14, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				r := newRNG(o.Seed, streamFeatures, uint64(i))
				u[i] = float64(r.fastNormal())
			}
		})
	}
	if classes == 0 {
		return nil, feats
	}

	// Mean of u over the node, its in-neighbours (row i) and its
	// out-neighbours (row i of the transpose), summed in a fixed order.
	tptr, tidx := graph.TransposeIdx(n, n, g.Indptr, g.Idx32)
	s := make([]float64, n)
	graph.RunRowParts(g.Indptr, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sum := u[i]
			for _, j := range g.Idx32[g.Indptr[i]:g.Indptr[i+1]] {
				sum += u[j]
			}
			for _, j := range tidx[tptr[i]:tptr[i+1]] {
				sum += u[j]
			}
			s[i] = sum / float64(1+g.Indptr[i+1]-g.Indptr[i]+tptr[i+1]-tptr[i])
		}
	})
	tidx = nil
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	thresholds := make([]float64, classes-1)
	for k := range thresholds {
		thresholds[k] = sorted[(k+1)*n/classes]
	}
	labels := make([]int32, n)
	graph.ParallelFor(n, 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			k, _ := slices.BinarySearch(thresholds, s[i])
			labels[i] = int32(k)
		}
	})

	addCentroids(o, labels, feats)
	return labels, feats
}

// addCentroids adds to every node's features its class's centroid, of
// norm about o.CentroidScale (none when it is not positive).
func addCentroids(o RMATOptions, labels []int32, feats []float32) {
	dim, classes, n := o.FeatDim, o.NumClasses, len(labels)
	if dim == 0 || o.CentroidScale <= 0 {
		return
	}
	cent := make([]float32, classes*dim)
	r := newRNG(o.Seed, streamCentroids, 0)
	scale := o.CentroidScale / math.Sqrt(float64(dim))
	for i := range cent {
		cent[i] = float32(r.normal() * scale)
	}
	graph.ParallelFor(n, 1<<10, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			l := int(labels[i])
			c := cent[l*dim : (l+1)*dim]
			for j, x := range c {
				feats[i*dim+j] += x
			}
		}
	})
}

// rmatSplits assigns every node to train, valid, test or none.
func rmatSplits(o RMATOptions, n int) (train, valid, test []int32) {
	t1 := o.TrainFrac
	t2 := t1 + o.ValidFrac
	t3 := t2 + o.TestFrac
	train, valid, test = []int32{}, []int32{}, []int32{}
	for i := 0; i < n; i++ {
		u := float64(mix3(o.Seed, streamSplits, uint64(i))>>11) / (1 << 53)
		switch {
		case u < t1:
			train = append(train, int32(i))
		case u < t2:
			valid = append(valid, int32(i))
		case u < t3:
			test = append(test, int32(i))
		}
	}
	return train, valid, test
}
