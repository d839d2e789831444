package train

import (
	"errors"
	"fmt"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/metrics"
	"strata/core/tensor"
)

// prepareFeatures returns the feature matrix to train on, after synthesis
// (for datasets without features) and normalisation, and the
// normalisation it applied ("row" or "none": "auto" resolved).
func prepareFeatures(d *graph.Dataset, norm string, synth int, seed uint64) ([]float32, int, string, error) {
	feats, dim := d.Features, d.FeatDim
	if dim == 0 {
		if synth <= 0 {
			return nil, 0, "", fmt.Errorf("data: dataset %q has no node features; set data.synth_features = <width> to train on random features", d.Name)
		}
		feats, dim = randomFeatures(d.NumNodes, synth, seed), synth
	}
	switch norm {
	case "none":
		return feats, dim, "none", nil
	case "auto":
		if !isBinaryDropping(feats, d.DropMappedPages) {
			return feats, dim, "none", nil
		}
	}
	return rowNormalize(feats, dim), dim, "row", nil
}

// isBinary reports whether every value is 0 or 1 (bag-of-words features,
// which Kipf & Welling row-normalise).
func isBinary(v []float32) bool {
	for _, x := range v {
		if x != 0 && x != 1 {
			return false
		}
	}
	return true
}

// scanChunk is how many feature values a scan of a mapped matrix reads
// before it gives the pages back (64 MiB of float32).
const scanChunk = 1 << 24

// isBinaryDropping is isBinary over a matrix that may be mapped from a
// file: drop runs after every scanChunk values (Dataset.DropMappedPages),
// so the scan does not leave the whole file resident.
func isBinaryDropping(v []float32, drop func()) bool {
	for lo := 0; lo < len(v); lo += scanChunk {
		ok := isBinary(v[lo:min(len(v), lo+scanChunk)])
		drop()
		if !ok {
			return false
		}
	}
	return true
}

// rowNormalize divides each row by its sum (rows summing to 0 stay 0).
func rowNormalize(v []float32, dim int) []float32 {
	out := make([]float32, len(v))
	rowNormalizeInto(out, v, dim)
	return out
}

// rowNormalizeInto writes v with each row divided by its sum into out
// (which may be v; out is pre-zeroed or v).
func rowNormalizeInto(out, v []float32, dim int) {
	for r := 0; r*dim < len(v); r++ {
		row := v[r*dim : (r+1)*dim]
		var s float64
		for _, x := range row {
			s += float64(x)
		}
		if s == 0 {
			continue
		}
		inv := 1 / s
		for j, x := range row {
			out[r*dim+j] = float32(float64(x) * inv)
		}
	}
}

func randomFeatures(n, dim int, seed uint64) []float32 {
	out := make([]float32, n*dim)
	for i := range out {
		out[i] = randomFeature(seed, i)
	}
	return out
}

// Adjacencies are the graph variants a model reads: Adj (the dataset's
// graph, symmetrised or without self loops; samplers and partitioners
// read it whatever the model) and AdjSelf (Adj with self loops; nil when
// built for a model that does not read "adj_self", BuildModelAdjacencies).
type Adjacencies struct {
	Adj, AdjSelf *graph.CSR
}

// BuildAdjacencies builds both graph variants from the dataset's graph.
// Edge weights (CSR.Values) stay on both: symmetrised as
// graph.Symmetrize says, or, unsymmetrised, with the duplicates of an
// edge merged into their sum (graph.SumDuplicates; an unweighted graph
// keeps its duplicates).
func BuildAdjacencies(d *graph.Dataset, symmetrize bool) (*Adjacencies, error) {
	return buildAdjacencies(d, symmetrize, true), nil
}

// BuildModelAdjacencies is BuildAdjacencies for model g: AdjSelf, a
// second copy of the graph, is built only when g reads "adj_self" (GCN,
// GAT; not GraphSAGE, whose mini-batch blocks add their self loops
// locally).
func BuildModelAdjacencies(d *graph.Dataset, symmetrize bool, g *ir.Graph) *Adjacencies {
	_, self := GraphReducers(g)["adj_self"]
	return buildAdjacencies(d, symmetrize, self)
}

func buildAdjacencies(d *graph.Dataset, symmetrize, self bool) *Adjacencies {
	var base *graph.CSR
	if symmetrize {
		base = graph.Symmetrize(d.Graph)
	} else {
		base = graph.SumDuplicates(graph.RemoveSelfLoops(d.Graph))
	}
	a := &Adjacencies{Adj: base}
	if self {
		a.AdjSelf = graph.AddSelfLoops(base)
	}
	return a
}

// GraphReducers returns the graphs a model reads, each with the reducers
// of its aggregations (whose edge weights it needs: "gcn", "mean").
func GraphReducers(g *ir.Graph) map[string]map[string]bool {
	used := map[string]map[string]bool{}
	for _, op := range g.Ops {
		if op.Kind == ir.OpGraph && used[op.Name] == nil {
			used[op.Name] = map[string]bool{}
		}
		if op.Kind == ir.OpAggregate {
			used[g.Ops[op.Args[0]].Name][op.Reducer] = true
		}
	}
	return used
}

// BindGraphs uploads the adjacencies named by the model graph, with the
// edge weights of its reducers.
func BindGraphs(g *ir.Graph, a *Adjacencies, be backend.Backend, dt tensor.DType, tier tensor.Tier) (map[string]*engine.Graph, error) {
	out := map[string]*engine.Graph{}
	for name, reducers := range GraphReducers(g) {
		csr := a.Adj
		if name == "adj_self" {
			if csr = a.AdjSelf; csr == nil {
				return nil, errors.New("graph \"adj_self\": the adjacencies were built without self loops for a model that does not read them")
			}
		}
		adj, err := be.UploadGraph(csr, tier)
		if err != nil {
			return nil, fmt.Errorf("upload graph %q: %w", name, err)
		}
		eg := &engine.Graph{Adj: adj}
		if engine.DropsEdges(g) {
			eg.Host = csr // keys the edges' dropout masks
		}
		out[name] = eg
		if engine.UsesEdgeIndex(g) {
			if eg.Edges, err = engine.BindEdgeIndex(be, csr, dt, tier); err != nil {
				return nil, fmt.Errorf("graph %q: %w", name, err)
			}
		}
		if reducers["gcn"] {
			if eg.GCNNorm, err = uploadEdgeWeights(be, graph.GCNNorm(csr), dt, tier); err != nil {
				return nil, err
			}
		}
		if reducers["mean"] {
			if eg.MeanNorm, err = uploadEdgeWeights(be, graph.MeanNorm(csr), dt, tier); err != nil {
				return nil, err
			}
		}
		out[name] = eg
	}
	return out, nil
}

func uploadEdgeWeights(be backend.Backend, w []float32, dt tensor.DType, tier tensor.Tier) (*tensor.Tensor, error) {
	return UploadFloat32s(be, w, []int{len(w)}, dt, tier)
}

// UploadFloat32s places host float32 data on the backend in the run's dtype.
func UploadFloat32s(be backend.Backend, v []float32, shape []int, dt tensor.DType, tier tensor.Tier) (*tensor.Tensor, error) {
	t, err := be.Alloc(dt, shape, tier)
	if err != nil {
		return nil, err
	}
	if dt == tensor.Float32 {
		return t, be.Upload(t, v)
	}
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return t, be.Upload(t, f)
}

// accuracy returns the share of idx whose prediction equals the label (0
// for no nodes), core/metrics' accuracy.
func accuracy(pred, labels, idx []int32) float64 {
	if len(idx) == 0 {
		return 0
	}
	m, _ := metrics.Lookup("accuracy")
	return m.Compute(metrics.Split{Pred: pred, Labels: labels, Idx: idx})
}

// ReleaseGraphs frees what BindGraphs uploaded.
func ReleaseGraphs(be backend.Backend, graphs map[string]*engine.Graph) {
	for _, g := range graphs {
		be.ReleaseGraph(g.Adj)
		if g.GCNNorm != nil {
			be.Release(g.GCNNorm)
		}
		if g.MeanNorm != nil {
			be.Release(g.MeanNorm)
		}
		g.Edges.Release(be)
	}
}

// randomFeature is value i (row-major) of the synthetic feature matrix of
// seed: a splitmix64 stream, so any row can be drawn alone.
func randomFeature(seed uint64, i int) float32 {
	z := seed ^ 0x5851f42d4c957f2d + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return float32(float64((z^(z>>31))>>40) / (1 << 24))
}
