package graph

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Dataset is a node-classification dataset: a graph with node features,
// labels and a train/valid/test split.
type Dataset struct {
	Name     string
	NumNodes int
	Graph    *CSR      // directed edges as stored/loaded (dst row <- src col), before transforms
	Features []float32 // row-major NumNodes x FeatDim (may be backed by a read-only mmap)
	FeatDim  int       // 0 when the dataset has no features
	// FeatureNodes, when not nil, are the nodes whose rows Features holds,
	// in order (len(FeatureNodes) x FeatDim values; WithFeatureRows).
	FeatureNodes []int32
	Labels       []int32 // -1 = unlabeled; nil for structure-only graphs and float targets
	// NumClasses is max label + 1 (0 without labels) or, with float
	// targets (Kind), their columns: the model's output width.
	NumClasses int
	// Kind says what the nodes are trained to predict: Classes (Labels)
	// or MultiLabel and Regression (Targets).
	Kind TargetKind
	// Targets, for Kind MultiLabel or Regression, are NumNodes ×
	// NumClasses values, row-major; NaN marks a missing target.
	Targets  []float32
	Train    []int32 // node ids, ascending
	Valid    []int32 // node ids, ascending
	Test     []int32 // node ids, ascending
	Source   string  // path, "embedded:cora" or an rmat spec
	Citation string  // how to cite the data ("" if unknown)
	mapped   []byte  // the file mapping the slices above may point into (OpenBinary)
}

// Validate checks the dataset invariants: graph shape and structure,
// feature size, labels in [-1, NumClasses), and splits that are ascending,
// in range, disjoint and labeled. Errors wrap ErrFormat, ErrRange or ErrSplit.
func (d *Dataset) Validate() error {
	name := d.Name
	if name == "" {
		name = "dataset"
	}
	if d.NumNodes < 0 {
		return fmt.Errorf("%s: negative node count %d: %w", name, d.NumNodes, ErrRange)
	}
	if d.Graph == nil {
		return fmt.Errorf("%s: no graph: %w", name, ErrFormat)
	}
	if d.Graph.NumRows != d.NumNodes || d.Graph.NumCols != d.NumNodes {
		return fmt.Errorf("%s: graph is %d x %d but the dataset has %d nodes: %w",
			name, d.Graph.NumRows, d.Graph.NumCols, d.NumNodes, ErrFormat)
	}
	if err := d.Graph.Validate(); err != nil {
		return fmt.Errorf("%s: %v: %w", name, err, ErrFormat)
	}
	if rows := d.NumNodes; d.FeatDim < 0 || (d.FeatureNodes == nil && len(d.Features) != rows*d.FeatDim) {
		return fmt.Errorf("%s: %d feature values for %d nodes x %d features: %w",
			name, len(d.Features), rows, d.FeatDim, ErrFormat)
	}
	if rows := len(d.FeatureNodes); d.FeatureNodes != nil && len(d.Features) != rows*d.FeatDim {
		return fmt.Errorf("%s: %d feature values for %d kept rows x %d features: %w",
			name, len(d.Features), rows, d.FeatDim, ErrFormat)
	}
	if d.NumClasses < 0 || d.NumClasses > MaxClasses {
		return fmt.Errorf("%s: %d classes, outside [0,%d]: %w", name, d.NumClasses, MaxClasses, ErrRange)
	}
	if d.Labels != nil && len(d.Labels) != d.NumNodes {
		return fmt.Errorf("%s: %d labels for %d nodes: %w", name, len(d.Labels), d.NumNodes, ErrFormat)
	}
	for i, l := range d.Labels {
		if l < -1 || int(l) >= d.NumClasses {
			return fmt.Errorf("%s: node %d has label %d outside [-1,%d): %w", name, i, l, d.NumClasses, ErrRange)
		}
	}
	if err := d.validateTargets(name); err != nil {
		return err
	}
	owner := make([]int8, d.NumNodes)
	for si, s := range [...]struct {
		name string
		ids  []int32
	}{{"train", d.Train}, {"valid", d.Valid}, {"test", d.Test}} {
		for k, id := range s.ids {
			if id < 0 || int(id) >= d.NumNodes {
				return fmt.Errorf("%s: %s split: node %d outside [0,%d): %w", name, s.name, id, d.NumNodes, ErrRange)
			}
			if k > 0 && id <= s.ids[k-1] {
				if id == s.ids[k-1] {
					return fmt.Errorf("%s: %s split: node %d listed twice: %w", name, s.name, id, ErrSplit)
				}
				return fmt.Errorf("%s: %s split is not ascending at position %d (%d after %d): %w",
					name, s.name, k, id, s.ids[k-1], ErrSplit)
			}
			if o := owner[id]; o != 0 {
				return fmt.Errorf("%s: node %d is in both the %s and the %s split: %w",
					name, id, SplitName(int(o)-1), s.name, ErrSplit)
			}
			owner[id] = int8(si + 1)
			if !d.Labelled(id) {
				return fmt.Errorf("%s: %s split: node %d has no label: %w", name, s.name, id, ErrSplit)
			}
		}
	}
	return nil
}

// CheckFeatures checks that every feature value is finite: the one check
// every loader shares (NaN and infinities would poison training). file
// names the source in the error, with the row and column of the value.
func CheckFeatures(file string, feats []float32, dim int) error {
	for i, v := range feats {
		if v-v != 0 { // NaN or ±Inf
			return FileErrorf(ErrRange, file, 0, 0, "feature [%d, %d] is %v, not a finite float32 (NaN and infinities would poison training); fix the data", i/max(dim, 1), i%max(dim, 1), v)
		}
	}
	return nil
}

// SplitName returns the name of split i (0 train, 1 valid, 2 test).
func SplitName(i int) string { return [3]string{"train", "valid", "test"}[i] }

// Component is one named part of a dataset's memory footprint.
type Component struct {
	Name  string
	Bytes int64
}

// MemoryFootprint lists the size of each stored array (including the
// parts that alias a mapped file), in a fixed order.
func (d *Dataset) MemoryFootprint() []Component {
	var out []Component
	if g := d.Graph; g != nil {
		out = append(out,
			Component{"graph.indptr", int64(len(g.Indptr)) * 8},
			Component{"graph.indices", int64(len(g.Idx32))*4 + int64(len(g.Idx64))*8})
		if g.Values != nil {
			out = append(out, Component{"graph.values", int64(len(g.Values)) * 4})
		}
	}
	out = append(out,
		Component{"features", int64(len(d.Features)) * 4},
		Component{"labels", int64(len(d.Labels)) * 4},
		Component{"splits", int64(len(d.Train)+len(d.Valid)+len(d.Test)) * 4})
	if d.Targets != nil {
		out = append(out, Component{"targets", int64(len(d.Targets)) * 4})
	}
	return out
}

// TotalBytes sums a memory footprint.
func TotalBytes(cs []Component) int64 {
	var t int64
	for _, c := range cs {
		t += c.Bytes
	}
	return t
}

// DegreeSummary describes one degree distribution.
type DegreeSummary struct {
	Min    int64   `json:"min"`
	Max    int64   `json:"max"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P99    float64 `json:"p99"` // 99th percentile (nearest rank)
	// Hist is a log2 histogram: Hist[0] counts degree 0 and Hist[k]
	// (k >= 1) counts degrees in [2^(k-1), 2^k).
	Hist []int64 `json:"log2_hist"`
}

// DegreeStats describes the in- and out-degree distributions of a graph.
// In-degree of node i is the length of row i (edges into i); out-degree is
// the number of entries with column i.
type DegreeStats struct {
	Nodes    int           `json:"nodes"`
	Edges    int64         `json:"edges"`
	In       DegreeSummary `json:"in"`
	Out      DegreeSummary `json:"out"`
	Isolated int           `json:"isolated"` // nodes with no in- and no out-edges
	Shape    DegreeShape   `json:"shape"`    // endpoint shares of the highest-degree nodes
}

// DegreeStats returns the degree statistics of the stored graph.
func (d *Dataset) DegreeStats() DegreeStats {
	if d.Graph == nil {
		return DegreeStats{Nodes: d.NumNodes}
	}
	return d.Graph.DegreeStats()
}

// DegreeStats returns the degree statistics of a square CSR.
func (c *CSR) DegreeStats() DegreeStats {
	in, out := Degrees(c)
	st := DegreeStats{Nodes: c.NumRows, Edges: c.NNZ(), In: summarize(in), Out: summarize(out), Shape: shapeOf(in, out)}
	for i := range in {
		if in[i] == 0 && (i >= len(out) || out[i] == 0) {
			st.Isolated++
		}
	}
	return st
}

// summarize computes the summary of one degree sequence.
func summarize(deg []int32) DegreeSummary {
	if len(deg) == 0 {
		return DegreeSummary{}
	}
	s := slices.Clone(deg)
	slices.Sort(s)
	n := len(s)
	var sum int64
	var hist []int64
	for _, v := range s {
		sum += int64(v)
		b := bits.Len64(uint64(v)) // 0 -> 0, [2^(k-1), 2^k) -> k
		for len(hist) <= b {
			hist = append(hist, 0)
		}
		hist[b]++
	}
	p99 := int(math.Ceil(0.99*float64(n))) - 1
	return DegreeSummary{
		Min:    int64(s[0]),
		Max:    int64(s[n-1]),
		Mean:   float64(sum) / float64(n),
		Median: (float64(s[(n-1)/2]) + float64(s[n/2])) / 2,
		P99:    float64(s[max(p99, 0)]),
		Hist:   hist,
	}
}
