package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/graph/numpy"
	"strata/core/graph/ogbout"
	"strata/core/metrics"
	"strata/core/safefile"
)

// inspection is what `strata inspect --json` prints.
type inspection struct {
	Dataset    string            `json:"dataset"`
	Source     string            `json:"source"`
	Nodes      int               `json:"nodes"`
	Edges      int64             `json:"edges"`
	IDBits     int               `json:"id_bits"`
	Features   int               `json:"features"`
	Classes    int               `json:"classes"`
	Targets    string            `json:"targets,omitempty"` // multi-label or regression: Classes counts them
	Train      int               `json:"train"`
	Valid      int               `json:"valid"`
	Test       int               `json:"test"`
	Degrees    graph.DegreeStats `json:"degrees"`
	Memory     map[string]int64  `json:"memory_bytes"`
	TotalBytes int64             `json:"total_bytes"`
	LoadTimeS  float64           `json:"load_time_s"`
	Citation   string            `json:"citation,omitempty"`
	components []graph.Component
}

func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "-i DATASET [--json]", stderr)
	in := fs.String("i", "", "dataset spec: embedded:cora, an OGB directory, a .strata file, a SNAP edge list or rmat-...")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	verify := fs.Bool("verify", false, "for a .strata file: verify every section's checksum and that all features are finite, however large the file")
	var maxMem memFlag
	registerMaxMemory(fs, &maxMem)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *in == "" {
		return usagef("inspect: -i DATASET is required (e.g. -i embedded:cora)")
	}
	if *verify {
		if !formats.IsBinary(*in) {
			return usagef("inspect: --verify checks a .strata binary file; %s is not one", *in)
		}
		if err := formats.VerifyBinary(*in); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "%s: verified (checksums and finite features)\n", *in)
	}
	t0 := time.Now()
	ds, err := openDataset(withMaxMemory(ctx, maxMem), *in, "inspect: loading", stderr)
	if err != nil {
		return err
	}
	r := inspect(ds, time.Since(t0))
	if *asJSON {
		b, err := json.Marshal(r)
		if err != nil {
			return &internalError{err}
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return nil
	}
	printInspection(stdout, r)
	return nil
}

func inspect(ds *graph.Dataset, load time.Duration) *inspection {
	r := &inspection{
		Dataset: ds.Name, Source: ds.Source, Nodes: ds.NumNodes, Features: ds.FeatDim, Classes: ds.NumClasses,
		Train: len(ds.Train), Valid: len(ds.Valid), Test: len(ds.Test),
		Degrees: ds.DegreeStats(), Memory: map[string]int64{}, LoadTimeS: load.Seconds(),
		Citation: ds.Citation, IDBits: 32,
	}
	if ds.HasTargets() {
		r.Targets = ds.Kind.String()
	}
	if ds.Graph != nil {
		r.Edges = ds.Graph.NNZ()
		if ds.Graph.Wide() {
			r.IDBits = 64
		}
	}
	r.components = ds.MemoryFootprint()
	for _, c := range r.components {
		r.Memory[c.Name] = c.Bytes
	}
	r.TotalBytes = graph.TotalBytes(r.components)
	return r
}

func printInspection(w io.Writer, r *inspection) {
	fmt.Fprintf(w, "dataset   %s (%s), loaded in %.3fs\n", r.Dataset, r.Source, r.LoadTimeS)
	fmt.Fprintf(w, "nodes     %d\n", r.Nodes)
	fmt.Fprintf(w, "edges     %d (directed, as stored; %d-bit ids)\n", r.Edges, r.IDBits)
	fmt.Fprintf(w, "features  %d\n", r.Features)
	if r.Targets != "" {
		fmt.Fprintf(w, "targets   %d (%s)\n", r.Classes, r.Targets)
	} else {
		fmt.Fprintf(w, "classes   %d\n", r.Classes)
	}
	fmt.Fprintf(w, "splits    train %d, valid %d, test %d\n", r.Train, r.Valid, r.Test)
	fmt.Fprintf(w, "isolated  %d nodes\n", r.Degrees.Isolated)
	fmt.Fprintf(w, "shape     the top 1%% of nodes by degree (in + out) hold %.1f%% of the edge endpoints, the top 10%% %.1f%%\n",
		100*r.Degrees.Shape.Top1, 100*r.Degrees.Shape.Top10)
	for _, d := range []struct {
		name string
		s    graph.DegreeSummary
	}{{"in-degree", r.Degrees.In}, {"out-degree", r.Degrees.Out}} {
		fmt.Fprintf(w, "%-10s min %d, median %g, mean %.2f, p99 %g, max %d\n", d.name, d.s.Min, d.s.Median, d.s.Mean, d.s.P99, d.s.Max)
		printHist(w, d.s.Hist)
	}
	fmt.Fprintln(w, "memory")
	for _, c := range r.components {
		fmt.Fprintf(w, "  %-14s %s\n", c.Name, metrics.FormatBytes(c.Bytes))
	}
	fmt.Fprintf(w, "  %-14s %s\n", "total", metrics.FormatBytes(r.TotalBytes))
	if r.Citation != "" {
		fmt.Fprintf(w, "cite      %s\n", r.Citation)
	}
}

// printHist draws a log2 degree histogram as bars.
func printHist(w io.Writer, hist []int64) {
	var peak int64
	for _, c := range hist {
		peak = max(peak, c)
	}
	for k, c := range hist {
		if c == 0 {
			continue
		}
		label := "0"
		if k == 1 {
			label = "1"
		} else if k > 1 {
			label = fmt.Sprintf("%d-%d", 1<<(k-1), 1<<k-1)
		}
		bar := int(40 * c / max(peak, 1))
		fmt.Fprintf(w, "  %12s %10d %s\n", label, c, strings.Repeat("#", max(bar, 1)))
	}
}

func cmdConvert(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", convertArgs, stderr)
	in := fs.String("i", "", "dataset spec to read (as data.dataset, including @random-<train>-<valid>-seed<k>)")
	out := fs.String("o", "", "output: a .strata file (--to strata) or a directory (--to npy; --to ogb: a new one)")
	to := fs.String("to", "strata", "output format: strata (binary, reopens in milliseconds), npy (a directory of .npy arrays for PyG/DGL: edge_index, x, y, train_mask, val_mask, test_mask) or ogb (a new directory in the OGB node-property raw layout, raw/*.csv.gz and split/converted/, as OGB's loaders and the peers' data.py read it)")
	asStored := fs.Bool("as-stored", false, "--to npy: write the edges as stored (an undirected dataset stored once per edge stays so) instead of both directions of every edge")
	asJSON := fs.Bool("json", false, "print one JSON object (output, files, nodes, edges_stored, edges_written, edges_trained, times) instead of a line")
	var maxMem memFlag
	registerMaxMemory(fs, &maxMem)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return usagef("convert: both -i DATASET and -o OUTPUT are required")
	}
	if *to != "strata" && *to != "npy" && *to != "ogb" {
		return usagef("convert: --to %q: want strata, npy or ogb", *to)
	}
	// The output must be a regular file and none of the input's files (a
	// .strata input is mapped: overwriting it would crash the reader).
	inputs := formats.InputFiles(*in)
	switch *to {
	case "strata":
		if err := safefile.CheckOutput(*out, inputs...); err != nil {
			return err
		}
	case "ogb":
		if err := ogbout.CheckOutput(*out, inputs...); err != nil {
			return fmt.Errorf("convert: %w", err)
		}
	default:
		if err := checkNPYOutput(*out, inputs); err != nil {
			return err
		}
	}
	// Held while converting: a second convert to the same output is
	// refused, and the temporary files a killed one left are removed.
	lock, err := safefile.Acquire(*out)
	if err != nil {
		return err
	}
	defer lock.Release()
	t0 := time.Now()
	ds, err := openDataset(withMaxMemory(ctx, maxMem), *in, "convert: loading", stderr)
	if err != nil {
		return err
	}
	parsed := time.Since(t0)
	if f, _ := ctx.Value(beforeWriteKey{}).(func()); f != nil {
		f() // a test interrupts the write phase here
	}
	res := &convertResult{Output: *out, To: *to, Nodes: ds.NumNodes, EdgesStored: ds.Graph.NNZ(), ParseS: parsed.Seconds()}
	switch *to {
	case "npy":
		return convertNPY(ctx, ds, res, *asStored, *asJSON, inputs, stdout, stderr)
	case "ogb":
		return convertOGB(ctx, ds, res, *asJSON, inputs, stdout, stderr)
	}
	binBytes := graph.TotalBytes(ds.MemoryFootprint())
	if err := trackWrite(stderr, "convert: writing", binBytes, func() error {
		return formats.WriteBinaryContext(ctx, *out, ds)
	}); err != nil {
		return err
	}
	t1 := time.Now()
	back, closer, err := formats.OpenBinary(*out)
	if err != nil {
		return fmt.Errorf("reopening %s: %w", *out, err)
	}
	reopen := time.Since(t1)
	defer closer.Close()
	res.EdgesWritten, res.ReopenS = back.Graph.NNZ(), reopen.Seconds()
	if *asJSON {
		res.EdgesTrained = graph.Symmetrize(back.Graph.Unweighted()).NNZ()
		return printJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "wrote %s: %d nodes, %d edges; parsed in %.3fs, reopens in %.4fs\n",
		*out, back.NumNodes, back.Graph.NNZ(), parsed.Seconds(), reopen.Seconds())
	return nil
}

// convertResult is what `strata convert --json` prints.
type convertResult struct {
	Output string   `json:"output"`
	To     string   `json:"to"`
	Files  []string `json:"files,omitempty"`
	Nodes  int      `json:"nodes"`
	// EdgesStored: the input's directed edges as stored (an undirected
	// dataset stored once per edge counts each once). EdgesWritten: the
	// output's (the columns of edge_index.npy). EdgesTrained: the directed
	// edges a model aggregates over with data.symmetrize = true (each
	// undirected edge both ways, no duplicates or self loops), what PyG's
	// layers see in a to_undirected edge_index.
	EdgesStored  int64   `json:"edges_stored"`
	EdgesWritten int64   `json:"edges_written"`
	EdgesTrained int64   `json:"edges_trained"`
	ParseS       float64 `json:"parse_s"`
	WriteS       float64 `json:"write_s,omitempty"`
	ReopenS      float64 `json:"reopen_s,omitempty"`
}

// convertNPY writes ds as a .npy directory (convert --to npy): both
// directions of every edge unless asStored.
func convertNPY(ctx context.Context, ds *graph.Dataset, res *convertResult, asStored, asJSON bool, inputs []string, stdout, stderr io.Writer) error {
	if !asStored || asJSON {
		both, loops := numpy.BothDirections(ds.Graph)
		res.EdgesTrained = both.NNZ() - int64(loops)
		if !asStored {
			d := *ds
			d.Graph = both
			ds = &d
		}
	}
	res.EdgesWritten = ds.Graph.NNZ()
	t1 := time.Now()
	var files []string
	err := trackWrite(stderr, "convert: writing", npyBytes(ds), func() error {
		var err error
		files, err = numpy.WriteNPYDirContext(ctx, res.Output, ds, inputs...)
		return err
	})
	if err != nil {
		return err
	}
	res.WriteS = time.Since(t1).Seconds()
	for _, f := range files {
		res.Files = append(res.Files, filepath.Base(f))
	}
	if asJSON {
		return printJSON(stdout, res)
	}
	how := "both directions of each edge"
	if asStored {
		how = "as stored"
	}
	fmt.Fprintf(stdout, "wrote %s (%s): %d nodes, %d edges stored, %d written (%s); parsed in %.3fs, written in %.3fs\n",
		res.Output, strings.Join(res.Files, ", "), res.Nodes, res.EdgesStored, res.EdgesWritten, how, res.ParseS, res.WriteS)
	return nil
}

// convertOGB writes ds as a new directory in the OGB raw layout (convert
// --to ogb): the edges as stored.
func convertOGB(ctx context.Context, ds *graph.Dataset, res *convertResult, asJSON bool, inputs []string, stdout, stderr io.Writer) error {
	if err := ogbout.Check(ds); err != nil {
		return fmt.Errorf("convert: %s: %w", res.Output, err)
	}
	res.EdgesWritten = ds.Graph.NNZ()
	t1 := time.Now()
	var files []string
	// Huffman-only gzip writes about 2/5 of TextBytes (BenchmarkWriteDir,
	// the ogbn-products stand-in): the progress total.
	err := trackWrite(stderr, "convert: writing", ogbout.TextBytes(ds)*2/5, func() error {
		var err error
		files, err = ogbout.WriteDir(ctx, res.Output, ds, ogbout.Options{}, inputs...)
		return err
	})
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	res.WriteS, res.Files = time.Since(t1).Seconds(), files
	if asJSON {
		res.EdgesTrained = graph.Symmetrize(ds.Graph).NNZ()
		return printJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "wrote %s (%d files, split/%s): %d nodes, %d edges as stored; parsed in %.3fs, written in %.3fs\n",
		res.Output, len(files), ogbout.SplitName, res.Nodes, res.EdgesWritten, res.ParseS, res.WriteS)
	return nil
}

// printJSON prints v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return &internalError{err}
	}
	fmt.Fprintf(w, "%s\n", b)
	return nil
}

// beforeWriteKey is the context key of a test's hook that convert calls
// after loading, before it writes (a test interrupts the write this way).
type beforeWriteKey struct{}

// checkNPYOutput refuses an output directory of convert --to npy that is
// an input (the dataset's own directory: its .npy files would be
// rewritten in place, float64 features becoming float32) or whose .npy
// files would replace one of the input's files.
func checkNPYOutput(dir string, inputs []string) error {
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		for _, in := range inputs {
			if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
				return fmt.Errorf("convert: -o %s is the input dataset's directory %s: --to npy would rewrite the input in place; give a new output directory: %w", dir, in, safefile.ErrUnsafe)
			}
		}
		for _, name := range numpy.NPYNames {
			if err := safefile.CheckOutput(filepath.Join(dir, name), inputs...); err != nil {
				return fmt.Errorf("convert: %w", err)
			}
		}
	}
	return nil
}

// npyBytes is about the size of the .npy files WriteNPYDir writes for d.
func npyBytes(d *graph.Dataset) int64 {
	n := int64(d.NumNodes)
	b := 16*d.Graph.NNZ() + 4*int64(len(d.Graph.Values))
	b += 4 * int64(len(d.Features))
	if d.Labels != nil {
		b += 8 * n
	}
	if len(d.Train)+len(d.Valid)+len(d.Test) > 0 {
		b += 3 * n
	}
	return b
}

// convertArgs is the synopsis of convert.
const convertArgs = "-i DATASET -o OUTPUT [--to strata|npy|ogb] [--as-stored] [--json]"
