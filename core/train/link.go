package train

import (
	"context"
	"fmt"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/graph/numpy"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/negative"
	"strata/core/registry"
)

// LinkTask is what a strategy needs to train link prediction
// (train.task = "link", Env.Link): the edge split, whose Graph the
// dataset already holds as the message-passing graph, the negative
// sampler bound to it, and the decoder.
type LinkTask struct {
	Split *graph.EdgeSplit
	// Sampler draws Negatives pairs per training positive, bound to the
	// message-passing graph.
	Sampler   negative.Sampler
	Negatives int
	// Decoder scores pairs: input "x" [N, Embedding] (node embeddings,
	// the model's output), graph "adj" the pairs (row i lists the sources
	// of the pairs whose destination is node i), output [pairs, 1]
	// logits in the graph's entry order; parameters "decoder.*".
	Decoder       *ir.Graph
	DecoderName   string
	DecoderSHA256 string
	Embedding     int
	// ExcludeBatch: a batch of edges takes its own training edges (and
	// their reverses) out of its sampled neighbourhoods (link.exclude).
	ExcludeBatch bool
	// Loss is "bce" or "margin"; Margin the margin of the latter.
	Loss   string
	Margin float64
}

// LinkFigures are a link task's figures in the result line, "link": {...}.
type LinkFigures struct {
	// Split is data.edge_split resolved (its seed spelled out);
	// Undirected says that an edge and its reverse are one pair.
	Split      string `json:"split"`
	Undirected bool   `json:"undirected"`
	// The positive pairs of each part of the split.
	TrainEdges int `json:"train_edges"`
	ValidEdges int `json:"valid_edges"`
	TestEdges  int `json:"test_edges"`
	// Negatives per training positive, the sampler and the decoder.
	Negatives int    `json:"negatives"`
	Sampler   string `json:"sampler"`
	Decoder   string `json:"decoder"`
	// EdgesPerS is the training positives per second of the median
	// epoch (each with its negatives).
	EdgesPerS float64 `json:"edges_per_s"`
}

// figures returns the task's figures for the result; the throughput is
// set when the epochs are measured.
func (t *LinkTask) figures(cfg *config.Config) *LinkFigures {
	s := t.Split
	sampler := cfg.Negative.ID
	if sampler == "" {
		sampler = "negative." + registry.DefaultName("negative")
	}
	return &LinkFigures{Split: s.Spec.String(), Undirected: s.Undirected, TrainEdges: s.Train.Len(), ValidEdges: s.Valid.Len(),
		TestEdges: s.Test.Len(), Negatives: t.Negatives, Sampler: sampler, Decoder: t.DecoderName}
}

// LinkScorer is a Stepper of a link task: ScorePairs writes the decoder's
// score (logit) of every pair (src[i], dst[i]) into scores, with dropout
// off, from one forward pass of the model.
type LinkScorer interface {
	ScorePairs(ctx context.Context, pairs graph.Pairs, scores []float64) error
}

// embeddingWidth is link.embedding with its default, model.hidden.
func embeddingWidth(cfg *config.Config) int {
	if w := cfg.Link.Embedding; w > 0 {
		return w
	}
	return cfg.Model.Hidden
}

// splitForLink splits ds's edges as data.edge_split says (generated, or
// the split the dataset ships) and leaves the message-passing graph in
// ds.Graph.
func splitForLink(cfg *config.Config, ds *graph.Dataset) (*graph.EdgeSplit, error) {
	spec, err := cfg.EdgeSplitSpec()
	if err != nil {
		return nil, err
	}
	var s *graph.EdgeSplit
	if spec.Source == "" {
		s, err = graph.SplitEdges(ds.Graph, spec, cfg.Data.Symmetrize)
	} else {
		var sh *graph.ShippedEdges
		if sh, err = numpy.ReadEdgeSplit(spec.Source, 0); err == nil {
			s, err = graph.SplitShipped(ds.Graph, sh, spec.Seed, cfg.Data.Symmetrize)
		}
	}
	if err != nil {
		return nil, cfg.KeyError(fmt.Sprintf("data.edge_split on dataset %q: %v", ds.Name, err), "data", "edge_split")
	}
	ds.Graph = s.Graph
	return s, nil
}

// EdgeSplitOf returns the edge split a link run of cfg trains and is
// scored on (strata split-edges writes it): data.dataset loaded as a run
// loads it, split as data.edge_split says.
func EdgeSplitOf(ctx context.Context, cfg *config.Config) (*graph.EdgeSplit, error) {
	ds, err := LoadDataset(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return splitForLink(cfg, ds)
}

// linkTaskFor builds the link task of a run: the negative sampler of
// [negative] (its default module when absent), bound to the split's
// graph, and the decoder of link.decoder.
func linkTaskFor(ctx context.Context, cfg *config.Config, host modhost.Host, split *graph.EdgeSplit) (*LinkTask, error) {
	dec, err := BuildDecoder(ctx, cfg, host, embeddingWidth(cfg))
	if err != nil {
		return nil, err
	}
	mod := cfg.Negative.Module
	if mod == nil {
		info, err := registry.Lookup("negative." + registry.DefaultName("negative"))
		if err != nil {
			return nil, fmt.Errorf("negative: no default negative sampler is registered: %w", err)
		}
		mod = info.New()
	}
	ns, ok := mod.(negative.Sampler)
	if !ok {
		return nil, fmt.Errorf("negative: module %T is not a negative sampler", mod)
	}
	if err := ns.Bind(ctx, split.Graph); err != nil {
		return nil, cfg.KeyError(fmt.Sprintf("negative: %v", err), "negative")
	}
	return &LinkTask{Split: split, Sampler: ns, Negatives: cfg.Link.Negatives, Decoder: dec.Graph, DecoderName: dec.Name,
		DecoderSHA256: dec.SHA256, Embedding: embeddingWidth(cfg), ExcludeBatch: cfg.Link.Exclude == "batch", Loss: cfg.Link.Loss, Margin: cfg.Link.Margin}, nil
}

// TrainNegatives returns the negatives of every training positive
// (Split.Train) drawn from the epoch's seed in one call: Negatives per
// positive, positive i's at [i*k, (i+1)*k). A positive's negatives depend
// on the seed and its index only, so a strategy that batches the edges
// takes each batch's from here and scores the same pairs as full-graph
// training.
func (t *LinkTask) TrainNegatives(ctx context.Context, seed uint64) (graph.Pairs, error) {
	pos := t.Split.Train
	src, dst, err := t.Sampler.Draw(ctx, pos.Src, pos.Dst, t.Negatives, seed)
	if err != nil {
		return graph.Pairs{}, fmt.Errorf("negative sampler: %w", err)
	}
	return graph.Pairs{Src: src, Dst: dst}, nil
}
