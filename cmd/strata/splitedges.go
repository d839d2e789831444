package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/graph/numpy"
	"strata/core/safefile"
	"strata/core/train"
)

// splitEdgesArgs is the synopsis of split-edges.
const splitEdgesArgs = "[-c FILE] [--set key=value]... -o DIR [--json]"

// splitEdgesResult is what `strata split-edges --json` prints.
type splitEdgesResult struct {
	Output string   `json:"output"`
	Split  string   `json:"split"`
	Files  []string `json:"files"`
	// The pairs of each part of the split.
	Train    int `json:"train"`
	Valid    int `json:"valid"`
	Test     int `json:"test"`
	ValidNeg int `json:"valid_neg"`
	TestNeg  int `json:"test_neg"`
}

// cmdSplitEdges writes the edge split a link run of the config trains
// on (data.dataset, data.symmetrize, data.edge_split, train.seed) as
// .npy pairs in DIR, which data.edge_split then names: every later run
// scores the same pairs.
func cmdSplitEdges(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("split-edges", splitEdgesArgs, stderr)
	var cf configFlags
	cf.register(fs)
	cf.sets = multi{"train.task=link"} // the --set flags follow
	out := fs.String("o", "", "the directory to write train.npy, valid.npy, test.npy, valid_neg.npy, test_neg.npy, train_eval.npy and train_eval_neg.npy into (e.g. <dataset>/split_edge/<name>, then data.edge_split = \"<name>\")")
	asJSON := fs.Bool("json", false, "print one JSON object (output, split, files, pairs per part) instead of a line")
	cfg, _, err := cf.load(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef("split-edges: -o DIR is required (where the split's .npy files go)")
	}
	spec, err := cfg.EdgeSplitSpec()
	if err != nil {
		return err
	}
	if spec.Source == "" && spec.Train+spec.Valid+spec.Test < 100 {
		return cfg.KeyError(fmt.Sprintf("data.edge_split = %q leaves %d%% of the edges out of every part, which a stored split cannot say (it would keep them in the message-passing graph); give shares that sum to 100", spec.String(), 100-spec.Train-spec.Valid-spec.Test), "data", "edge_split")
	}
	inputs := formats.InputFiles(cfg.DatasetSpec())
	if spec.Source != "" {
		for _, p := range graph.EdgeSplitParts {
			inputs = append(inputs, filepath.Join(spec.Source, p+".npy"))
		}
		inputs = append(inputs, spec.Source)
	}
	lock, err := safefile.Acquire(*out)
	if err != nil {
		return err
	}
	defer lock.Release()
	s, err := train.EdgeSplitOf(withMaxMemory(ctx, cf.maxMem), cfg)
	if err != nil {
		return err
	}
	files, err := numpy.WriteEdgeSplitDir(ctx, *out, s, inputs...)
	if err != nil {
		return err
	}
	res := splitEdgesResult{Output: *out, Split: s.Spec.String(), Files: files, Train: s.Train.Len(), Valid: s.Valid.Len(),
		Test: s.Test.Len(), ValidNeg: s.ValidNeg.Len(), TestNeg: s.TestNeg.Len()}
	if *asJSON {
		return printJSON(stdout, res)
	}
	use := *out // a bare name would name a split under the dataset's split_edge/
	if !strings.ContainsAny(use, `/\`) {
		use = "./" + use
	}
	fmt.Fprintf(stdout, "wrote %s: edge split %s, %d train, %d valid, %d test pairs, %d + %d negatives; use it with data.edge_split = %q\n",
		*out, res.Split, res.Train, res.Valid, res.Test, res.ValidNeg, res.TestNeg, use)
	return nil
}
