package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"strata/core/safefile"
	"strata/core/train"
)

// linkResult is the part of predict's result line for a link-prediction
// model: the embeddings' width, the edge split its graph was split by,
// the split's held-out test figures (ROC-AUC and average precision of
// its test positives against their negatives, as training reports them)
// and the pairs scored.
type linkResult struct {
	Embedding int      `json:"embedding"`
	EdgeSplit string   `json:"edge_split"`
	Test      int      `json:"test_pairs"`
	TestAUC   *float64 `json:"test_auc,omitempty"` // absent when the split has no test edges
	TestAP    *float64 `json:"test_ap,omitempty"`
	Pairs     int      `json:"pairs"`
}

// writeLinkPredictions writes a link model's predictions into outDir:
// embeddings.npy (float32, nodes × embedding) and, with a pair file,
// scores.npy (float32, (P,)) and scores.csv (src,dst,score), each
// refusing any of inputs; then the result line.
func writeLinkPredictions(p *train.Predictions, outDir, modelPath string, inputs []string, stdout, stderr io.Writer) error {
	lp := p.Link
	n := len(p.Logits) / max(p.Width, 1)
	if err := writeFloatNPY(filepath.Join(outDir, "embeddings.npy"), p.Logits, []int{n, p.Width}, inputs...); err != nil {
		return err
	}
	files := []string{"embeddings.npy"}
	if lp.Scores != nil {
		if err := writeScores(lp, outDir, inputs); err != nil {
			return err
		}
		files = append(files, "scores.npy", "scores.csv")
	}
	fmt.Fprintf(stderr, "strata predict: %s: %d nodes predicted with %s (best epoch %d, valid AUC %.4f; test AUC %.4f on %s): %s\n",
		outDir, n, modelPath, p.Model.BestEpoch, p.Model.BestValidAcc, lp.TestAUC, lp.Split, strings.Join(files, ", "))
	lr := &linkResult{Embedding: p.Width, EdgeSplit: lp.Split, Test: lp.Test, Pairs: lp.Pairs}
	if lp.Test > 0 {
		lr.TestAUC, lr.TestAP = &lp.TestAUC, &lp.TestAP
	}
	line, err := json.Marshal(predictResult{Model: modelPath, ModelSHA256: p.Identity.SHA256(), Out: outDir, Nodes: n, Files: files, Link: lr})
	if err != nil {
		return &internalError{err}
	}
	fmt.Fprintf(stdout, "%s\n", line)
	return nil
}

// writeScores writes scores.npy (float32, one logit per pair) and
// scores.csv (src,dst,score, one line per pair in the file's order).
func writeScores(lp *train.LinkPredictions, outDir string, inputs []string) error {
	if err := writeFloatNPY(filepath.Join(outDir, "scores.npy"), lp.Scores, []int{len(lp.Scores)}, inputs...); err != nil {
		return err
	}
	return safefile.Write(filepath.Join(outDir, "scores.csv"), func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		bw.WriteString("src,dst,score\n")
		for i, x := range lp.Scores {
			bw.WriteString(strconv.Itoa(int(lp.Scored.Src[i])) + "," + strconv.Itoa(int(lp.Scored.Dst[i])) + "," + strconv.FormatFloat(float64(float32(x)), 'g', -1, 32) + "\n")
		}
		return bw.Flush()
	}, inputs...)
}
