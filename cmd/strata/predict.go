package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/graph/numpy"
	"strata/core/safefile"
	"strata/core/train"
	"strata/plugins/wasm"
)

// cmdPredict loads a model saved by output.model and writes every node's
// predicted class (predictions.npy, int32, and predictions.csv) and the
// model's output (logits.npy, float32, nodes × classes) and its last
// hidden layer (embeddings.npy and embeddings.csv, nodes × width) to a
// directory; for a link-prediction model, its node embeddings and the
// scores of the pairs --pairs names (predictLink).
func cmdPredict(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("predict", "-m MODEL [-i DATASET] [--pairs FILE] [-c FILE] [--set key=value]... -o DIR", stderr)
	var cf configFlags
	cf.register(fs)
	modelFlag := fs.String("m", "", "the model file a training run wrote (output.model); it holds the model's config")
	inFlag := fs.String("i", "", "the graph to predict (any dataset spec with the model's feature width, labelled or not; default: the dataset it was trained on)")
	outFlag := fs.String("o", "", "the directory to write predictions.npy, predictions.csv, logits.npy, embeddings.npy and embeddings.csv to (created if missing); a link model writes embeddings.npy, and scores.npy and scores.csv with --pairs")
	pairsFlag := fs.String("pairs", "", "a link-prediction model only: the node pairs to score, a .csv file of src,dst lines (an optional header line first) or a .npy (P, 2) integer array; their decoder logits go to scores.npy and scores.csv")
	var rf runtimeFlags
	rf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	modelPath, outDir := *modelFlag, *outFlag
	if modelPath == "" || outDir == "" {
		return usagef("predict: -m MODEL and -o DIR are required")
	}
	mf, _, err := safefile.Open(modelPath) // a FIFO would block the read
	if err != nil {
		return fmt.Errorf("-m %s: %w: give the model file a run wrote (output.model)", modelPath, err)
	}
	mf.Close()
	cfg, wopts, err := predictConfig(&cf, modelPath, *inFlag)
	if err != nil {
		return err
	}
	var pairs *graph.PairFile
	if *pairsFlag != "" { // read (and checked) before the dataset loads
		if pairs, err = numpy.ReadPairs(*pairsFlag, int64(cf.maxMem)); err != nil {
			return fmt.Errorf("--pairs: %w", err)
		}
	}
	stopProfile, err := rf.start(cf.maxMem, append(profileInputs(cf.path, cfg.DatasetSpec()), modelPath)...)
	if err != nil {
		return err
	}
	defer func() {
		if perr := stopProfile(); perr != nil && err == nil {
			err = perr
		}
	}()
	// Every output is checked against every input before anything runs:
	// -o next to the config, the dataset or the model must not replace
	// one of them.
	inputs := append(append([]string{cf.path, modelPath, cfg.ModulePath(), *pairsFlag}, formats.InputFiles(cfg.DatasetSpec())...), outputPaths(cfg)...)
	if graph.IsDir(outDir) { // else it is created below
		for _, name := range slices.Concat(predictFiles, scoreFiles) {
			if err := safefile.CheckOutput(filepath.Join(outDir, name), inputs...); err != nil {
				return fmt.Errorf("predict: %w", err)
			}
		}
	}
	ctx = withMaxMemory(ctx, cf.maxMem)
	ctx = graph.WithLoadProgress(ctx, graph.LoadProgress{W: progressWriter(cfg.Output.Progress, stderr), Label: "predict: loading", Quiet: quietFor, Every: plainEvery})
	p, err := train.Predict(ctx, cfg, modelPath, wasm.Host{Options: wopts}, pairs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	lock, err := safefile.Acquire(outDir)
	if err != nil {
		return err
	}
	defer lock.Release()
	if p.Link != nil {
		return writeLinkPredictions(p, outDir, modelPath, inputs, stdout, stderr)
	}
	return writePredictions(p, cfg.Train.Mode, outDir, modelPath, inputs, stdout, stderr)
}

// predictConfig is the config predict runs: -c FILE (whose model must be
// the saved one's), else the model file's own (ModelMeta.PredictConfig);
// -i as data.dataset, then --set. A graph named by -i or --set
// data.dataset is predicted with its own split (all its labelled nodes,
// or none), not the training config's data.split, unless --set
// data.split gives one.
func predictConfig(cf *configFlags, modelPath, dataset string) (*config.Config, wasm.Options, error) {
	wopts, err := cf.wasm.options()
	if err != nil {
		return nil, wasm.Options{}, err
	}
	sets := slices.Clone([]string(cf.sets))
	setsKey := func(key string) bool {
		return slices.ContainsFunc(sets, func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), key+"=") })
	}
	if dataset != "" {
		if setsKey("data.dataset") {
			return nil, wasm.Options{}, usagef("predict: -i and --set data.dataset= both name the graph; give one")
		}
		sets = append([]string{"data.dataset=" + dataset}, sets...)
	}
	var cfg *config.Config
	if cf.path != "" {
		cfg, err = config.Load(cf.path, sets...)
	} else {
		var meta *train.ModelMeta
		if meta, _, err = train.ReadModel(modelPath); err != nil {
			return nil, wasm.Options{}, err
		}
		cfg, err = meta.PredictConfig(modelPath, sets...)
	}
	if err != nil {
		return nil, wasm.Options{}, err
	}
	if setsKey("data.dataset") && !setsKey("data.split") {
		cfg.Data.Split = ""
	}
	return cfg, wopts, nil
}

// predictFiles are the files predict may write into its -o directory
// for a node model; a link model writes embeddings.npy and scoreFiles.
var predictFiles = []string{"predictions.npy", "predictions.csv", "logits.npy", "embeddings.npy", "embeddings.csv"}

// scoreFiles are the pair scores a link model writes (--pairs).
var scoreFiles = []string{"scores.npy", "scores.csv"}

// outputPaths lists the files a config names as a run's outputs (csv,
// log, checkpoint, model): predict reads the model and must not write
// over the others' results either.
func outputPaths(cfg *config.Config) []string {
	return []string{cfg.CSVPath(), cfg.LogPath(), cfg.CheckpointPath(), cfg.ModelPath()}
}

// writePredictions writes the files of predictFiles that p has into
// outDir, each refusing any of inputs.
func writePredictions(p *train.Predictions, mode, outDir, modelPath string, inputs []string, stdout, stderr io.Writer) error {
	n := len(p.Classes)
	if err := writePredicted(p, outDir, inputs); err != nil {
		return err
	}
	files := "predictions.npy, predictions.csv"
	if p.Logits != nil && len(p.Logits) == n*p.Width {
		if err := writeFloatNPY(filepath.Join(outDir, "logits.npy"), p.Logits, []int{n, p.Width}, inputs...); err != nil {
			return err
		}
		files += ", logits.npy"
	} else {
		fmt.Fprintf(stderr, "strata predict: train.mode = %q gives no logits; logits.npy not written\n", mode)
	}
	if p.Hidden != nil && p.HiddenWidth > 0 && len(p.Hidden) == n*p.HiddenWidth {
		if err := writeFloatNPY(filepath.Join(outDir, "embeddings.npy"), p.Hidden, []int{n, p.HiddenWidth}, inputs...); err != nil {
			return err
		}
		if err := safefile.Write(filepath.Join(outDir, "embeddings.csv"), func(w io.Writer) error {
			bw := bufio.NewWriter(w)
			for i := range n {
				for k, v := range p.Hidden[i*p.HiddenWidth : (i+1)*p.HiddenWidth] {
					if k > 0 {
						bw.WriteByte(',')
					}
					bw.WriteString(strconv.FormatFloat(float64(float32(v)), 'g', -1, 32))
				}
				bw.WriteByte('\n')
			}
			return bw.Flush()
		}, inputs...); err != nil {
			return err
		}
		files += ", embeddings.npy, embeddings.csv"
	} else {
		fmt.Fprintf(stderr, "strata predict: no last hidden layer (a one-layer model, or train.mode = %q); embeddings not written\n", mode)
	}
	fmt.Fprintf(stderr, "strata predict: %s: %d nodes predicted with %s (best epoch %d, valid %.4f): %s\n",
		outDir, n, modelPath, p.Model.BestEpoch, p.Model.BestValidAcc, files)
	line, err := json.Marshal(predictResult{Model: modelPath, ModelSHA256: p.Identity.SHA256(), Out: outDir, Nodes: n, Classes: p.Width,
		Labelled: p.Labelled, Accuracy: p.Accuracy, Files: strings.Split(files, ", ")})
	if err != nil {
		return &internalError{err}
	}
	fmt.Fprintf(stdout, "%s\n", line)
	return nil
}

// writeClasses writes predictions.npy (int32, (N,)) and predictions.csv
// (node,class) of a classifier's predictions.
func writeClasses(p *train.Predictions, outDir string, inputs []string) error {
	return writePredictionFiles(outDir, []int{len(p.Classes)}, "<i4", func(bw *bufio.Writer) {
		var b [4]byte
		for _, c := range p.Classes {
			binary.LittleEndian.PutUint32(b[:], uint32(c))
			bw.Write(b[:])
		}
	}, "node,class", func(i int) string { return strconv.Itoa(int(p.Classes[i])) }, inputs)
}

// writePredictionFiles writes predictions.npy (shape, descr, its data
// written by body) and predictions.csv (header, then node i and row(i)
// per line), each refusing any of inputs.
func writePredictionFiles(outDir string, shape []int, descr string, body func(*bufio.Writer), header string, row func(i int) string, inputs []string) error {
	err := safefile.Write(filepath.Join(outDir, "predictions.npy"), func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		bw.Write(numpy.NPYHeader(shape, descr))
		body(bw)
		return bw.Flush()
	}, inputs...)
	if err != nil {
		return err
	}
	return safefile.Write(filepath.Join(outDir, "predictions.csv"), func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		bw.WriteString(header + "\n")
		for i := range shape[0] {
			bw.WriteString(strconv.Itoa(i) + "," + row(i) + "\n")
		}
		return bw.Flush()
	}, inputs...)
}

// predictResult is predict's result line, alone on stdout (what a
// person reads goes to stderr): what it wrote, the model's identity hash
// and, on a labelled graph, the accuracies (over all labelled nodes and
// per split).
type predictResult struct {
	Model       string             `json:"model"`
	ModelSHA256 string             `json:"model_sha256"`
	Out         string             `json:"out"`
	Nodes       int                `json:"nodes"`
	Classes     int                `json:"classes,omitempty"`
	Labelled    int                `json:"labelled"`
	Accuracy    map[string]float64 `json:"accuracy,omitempty"`
	Files       []string           `json:"files"`
	// Link is a link-prediction model's (omitted for others).
	Link *linkResult `json:"link,omitempty"`
}

// writeFloatNPY writes v as a float32 .npy file of shape atomically.
func writeFloatNPY(path string, v []float64, shape []int, inputs ...string) error {
	return safefile.Write(path, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		bw.Write(numpy.NPYHeader(shape, "<f4"))
		var b [4]byte
		for _, x := range v {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(float32(x)))
			bw.Write(b[:])
		}
		return bw.Flush()
	}, inputs...)
}
