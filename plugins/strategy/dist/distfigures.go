package dist

import (
	"fmt"
	"strings"

	"strata/core/graph"
	"strata/core/train"
)

// DistFigures are the figures of a run over several processes
// (strategy.distmini, strategy.distfull; docs/distributed.md) in the
// result line, under the strategy's name: every rank's figures in rank
// order.
type DistFigures struct {
	Ranks []RankStats `json:"ranks" doc:"every rank's figures in rank order"`
}

// RankStats are one rank's figures of a distributed run: its epoch times,
// what it owns, and the bytes it sent to the other ranks in its last
// epoch, by purpose (features, topology, requests, gradients, loss).
type RankStats struct {
	Rank             int     `json:"rank"`
	EpochTimeMedianS float64 `json:"epoch_time_median_s"`
	// CommS is the last epoch's time spent in collectives (waiting for
	// the other ranks included).
	CommS      float64 `json:"comm_s"`
	Nodes      int     `json:"nodes"`       // nodes it owns
	TrainNodes int     `json:"train_nodes"` // training nodes it owns
	// TrainEdges are the training edges it owns, a link task's positives
	// by their source (train.task = "link").
	TrainEdges int              `json:"train_edges,omitempty"`
	SentBytes  int64            `json:"sent_bytes"`
	SentBy     map[string]int64 `json:"sent_by_purpose"`
	// PredictedBy are the bytes the partition predicts the rank sends
	// each epoch, by purpose (the keys of SentBy it predicts):
	// strategy.distfull's halo rows per layer, exactly; strategy.distmini's
	// expected feature rows of the sampled neighbourhoods.
	PredictedBy map[string]int64 `json:"predicted_by_purpose,omitempty"`
}

// Summary implements train.Summarizer: each rank's epoch time and bytes
// sent in the last epoch, for the text result line; "" for one process.
func (f *DistFigures) Summary() string {
	if len(f.Ranks) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("ranks:")
	for _, r := range f.Ranks {
		fmt.Fprintf(&b, " %d: %.4gs %s sent", r.Rank, r.EpochTimeMedianS, graph.FormatBytes(r.SentBytes))
		if r.Rank < len(f.Ranks)-1 {
			b.WriteString(",")
		}
	}
	return b.String()
}

// Figures implements train.FigureDeclarer.
func (*DistFull) Figures() any { return &DistFigures{} }

// Figures implements train.FigureDeclarer.
func (*DistMini) Figures() any { return &DistFigures{} }

// CheckRules implements train.CheckRuler: the ranks' measured times are
// not compared by the experiment check; their bytes and nodes are.
func (*DistFigures) CheckRules() []train.CheckRule {
	return []train.CheckRule{
		{Pattern: "ranks.*.epoch_time_median_s", Why: train.WhyWallClock},
		{Pattern: "ranks.*.comm_s", Why: train.WhyWallClock},
	}
}
