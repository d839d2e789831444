package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/metrics"
)

// idDecoder is the identity key of a link model's decoder module, whose
// bytes count by their SHA-256 (as the layer module's).
const idDecoder = "link.decoder"

// addDecoderSum adds, for a link task, the SHA-256 of link.decoder's
// module bytes to modules under idDecoder: the decoder is part of what a
// saved link model computes.
func addDecoderSum(cfg *config.Config, modules map[string]string) error {
	if cfg.Train.Task != config.TaskLink {
		return nil
	}
	_, code, err := decoderBytes(cfg)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(code)
	modules[idDecoder] = hex.EncodeToString(sum[:])
	return nil
}

// LinkPredictions are what a link model predicts: the node embeddings
// (the model's output), the held-out test figures of its split, and the
// scores of the pairs asked for.
type LinkPredictions struct {
	Embedding int         // the embeddings' width
	Split     string      // data.edge_split as resolved ("random-85-5-10-seed0")
	Test      int         // the split's test positives (0: the split holds none)
	TestAUC   float64     // ROC-AUC of the test positives against their negatives
	TestAP    float64     // their average precision
	Pairs     int         // the pairs scored (PairFile)
	Scored    graph.Pairs // those pairs, in the file's order
	Scores    []float64   // the decoder's logit of each of them; nil without a PairFile
}

// predictLink fills p for a link model: st's outputs (the embeddings,
// into p.Logits) and, in one call of its ScorePairs, the scores of the
// split's test pairs and of pairs (nil: none), whose node ids it checks
// against the graph first.
func predictLink(ctx context.Context, cfg *config.Config, env *Env, st Stepper, pairs *graph.PairFile, p *Predictions) error {
	if pairs != nil {
		if err := pairs.CheckNodes(env.Dataset.NumNodes, env.Dataset.Name); err != nil {
			return err
		}
	}
	sc, scores := st.(LinkScorer)
	op, outputs := st.(OutputPredictor)
	if !scores || !outputs {
		return cfg.KeyError(fmt.Sprintf("a link-prediction model predicts with train.mode = %s; train.mode = %q gives no pair scores or embeddings", modesUsing(func(u Uses) bool { return u.Link }), cfg.Train.Mode), "train", "mode")
	}
	var err error
	if p.Logits, _, _, err = op.PredictOutputs(ctx); err != nil {
		return err
	}
	task := env.Link
	spec, err := cfg.EdgeSplitSpec()
	if err != nil {
		return err
	}
	lp := &LinkPredictions{Embedding: task.Embedding, Split: spec.String(), Test: task.Split.Test.Len()}
	if n := env.Dataset.NumNodes; len(p.Logits) != n*task.Embedding {
		return fmt.Errorf("predict: %d embedding values for %d nodes of width %d", len(p.Logits), n, task.Embedding)
	}
	all := task.Split.Test.Append(task.Split.TestNeg)
	if pairs != nil {
		lp.Pairs, lp.Scored = pairs.Pairs.Len(), pairs.Pairs
		all = all.Append(pairs.Pairs)
	}
	out := make([]float64, all.Len())
	if all.Len() > 0 {
		if err := sc.ScorePairs(ctx, all, out); err != nil {
			return err
		}
	}
	pos, neg := out[:lp.Test], out[lp.Test:lp.Test+task.Split.TestNeg.Len()]
	if lp.Test > 0 && len(neg) > 0 {
		lp.TestAUC = metrics.LinkAUC(pos, neg)
		lp.TestAP = metrics.AveragePrecision(pos, neg)
	}
	if pairs != nil {
		lp.Scores = out[lp.Test+len(neg):]
	}
	p.Width, p.Link = task.Embedding, lp
	return nil
}
