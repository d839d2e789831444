package graph

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"strata/core/registry"
	"strata/core/safefile"
)

// Format is a format.* module: one way a dataset is stored (a file type,
// a directory layout or a spec such as "rmat-<scale>"). Open asks every
// registered format to Detect a spec, opens it with the most certain one
// and applies the split after '@' itself, as the format's Support says.
// A format registers itself from init (registry.Register); the built-in
// formats (core/graph/formats, core/graph/numpy) are what core opens
// without plugins: core/train links them.
type Format interface {
	registry.Module
	// Detect reports how surely the format reads spec: 0 not at all,
	// otherwise one of the Detect* levels (the highest wins; a tie goes
	// to the first format by ID). st is os.Stat's answer for spec, nil
	// when no file or directory has that name.
	Detect(spec string, st fs.FileInfo) int
	// Open loads the dataset spec as o asks.
	Open(spec string, o LoadOptions) (*Dataset, error)
	// Supports declares what Open honours of LoadOptions, and the spec
	// form the format takes.
	Supports() Support
}

// Detection levels of Format.Detect.
const (
	DetectFallback = 1    // the format reads any path of its kind and explains what is missing
	DetectSuffix   = 10   // the file name's extension
	DetectLayout   = 50   // a directory layout or a spec form
	DetectContent  = 100  // the file's content (its magic bytes)
	DetectPrefix   = 1000 // a spec prefix no path takes ("embedded:")
)

// Support is what a format declares of itself.
type Support struct {
	// Spec is the spec form, one phrase for error messages, `strata
	// config explain` and docs ("a Matrix Market .mtx file").
	Spec string
	// NamedSplits: Open reads the split LoadOptions.Split names (and
	// NoSplit as none); otherwise only a generated split can follow '@'.
	NamedSplits bool
	// Rows: with LoadOptions.Keep, Open reads only the feature rows of
	// LoadOptions.Rows (setting Dataset.FeatureNodes); otherwise Open's
	// caller drops the other rows after loading.
	Rows bool
	// Budget: every size read from the input is checked against
	// LoadOptions.Budget before it is allocated; otherwise Open refuses
	// input whose files exceed the budget before calling the format.
	Budget bool
	// GraphOnly: the format stores the graph alone (no features, labels
	// or splits).
	GraphOnly bool
}

// LoadOptions is what a Format's Open is asked for.
type LoadOptions struct {
	// Ctx is the load's context (OpenContext's). Progress is shown around
	// the whole load from the process's bytes read (WithLoadProgress), so
	// a format needs no hook for it.
	Ctx context.Context
	// Split names the split to read ("" the dataset's own, NoSplit none:
	// a generated one replaces it). Only a format with NamedSplits sees
	// anything but "".
	Split string
	// Budget is the memory budget in bytes (> 0).
	Budget int64
	// Keep asks for only the feature rows of Rows, in that order.
	Rows []int32
	Keep bool
	// Regression asks for the labels as regression targets
	// (WithRegression); formats without float targets ignore it.
	Regression bool
}

// NoSplit, as LoadOptions.Split, reads no split (a generated one
// replaces it).
const NoSplit = "\x00none"

// Formats returns the registered formats, by ID.
func Formats() []Format {
	var out []Format
	for _, info := range registry.Namespace("format") {
		if f, ok := info.New().(Format); ok {
			out = append(out, f)
		}
	}
	return out
}

// FormatID returns the registry ID of f.
func FormatID(f Format) string { return f.StrataModule().ID }

// SpecForms lists the dataset specs Open accepts, from the registered
// formats, for error messages and the data.dataset documentation.
func SpecForms() string {
	var forms []string
	for _, f := range Formats() {
		forms = append(forms, f.Supports().Spec)
	}
	return strings.Join(forms, "; ") + "; any of them may end in @random-<train>-<valid>-seed<k> " +
		"(a generated split, see docs/datasets.md), one with named splits in @<split>"
}

// Detect returns the format that reads spec (nil when none does) and
// os.Stat's answer for spec (nil when no such path). A special file
// (FIFO, device) is an error.
func Detect(spec string) (Format, fs.FileInfo, error) {
	var st fs.FileInfo
	if s, err := StatRegular(spec); err == nil {
		st = s
	} else if s != nil {
		return nil, nil, err
	}
	var best Format
	score := 0
	for _, f := range Formats() {
		if v := f.Detect(spec, st); v > score {
			best, score = f, v
		}
	}
	return best, st, nil
}

// FormatInfo is the ModuleInfo of a format module named "format."+name.
func FormatInfo[F Format](name, doc string, newF func() F) registry.ModuleInfo {
	return registry.ModuleInfo{ID: "format." + name, Doc: doc, New: func() registry.Module { return newF() }}
}

// IsFile reports whether st is a regular file.
func IsFile(st fs.FileInfo) bool { return st != nil && st.Mode().IsRegular() }

// HasExt reports whether path (less a ".gz") ends in one of exts,
// ignoring case.
func HasExt(path string, exts ...string) bool {
	ext := filepath.Ext(strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(path, ".gz"), ".GZ")))
	return slices.Contains(exts, ext)
}

// Example is an input of a format's conformance suite (formattest).
type Example struct {
	Name string
	// Spec is what Open reads (a path under the directory the examples
	// were written to, or a spec such as "embedded:cora").
	Spec string
	// Want is what a valid example loads (nil: anything valid); unused
	// for a broken one.
	Want *Dataset
	// Kind and Err describe a broken example: the sentinel its error
	// wraps and fragments it must hold (the file and its line, column or
	// array). A nil Kind marks a valid example.
	Kind error
	Err  []string
	// Huge: a broken example that declares sizes far beyond a small
	// budget; it must be refused before they are allocated.
	Huge bool
}

// WriteExample writes body to dir/name and returns the path.
func WriteExample(dir, name string, body []byte) (string, error) {
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, safefile.WriteFile(p, body)
}

// Exampler is a Format that provides its conformance suite's inputs:
// valid datasets (at least one, not empty, with labels unless GraphOnly)
// and broken ones, written into dir.
type Exampler interface {
	Examples(dir string) ([]Example, error)
}

// TinyDataset is a small dataset for examples: n nodes in a ring with
// chords, dim features, 2 classes (with one unlabeled node) and splits.
func TinyDataset(n, dim int) *Dataset {
	var edges [][2]int64
	for i := range n {
		edges = append(edges, [2]int64{int64(i), int64((i + 1) % n)}, [2]int64{int64(i), int64((i * 3) % n)})
	}
	d := &Dataset{Name: "tiny", NumNodes: n, Graph: FromEdges(n, edges), FeatDim: dim, NumClasses: 2}
	d.Features = make([]float32, n*dim)
	for i := range d.Features {
		d.Features[i] = float32(i%7) - 2.5
	}
	d.Labels = make([]int32, n)
	for i := range n {
		d.Labels[i] = int32(i % 2)
		switch {
		case i == n-1:
			d.Labels[i] = -1
		case i < n/2:
			d.Train = append(d.Train, int32(i))
		case i < 3*n/4:
			d.Valid = append(d.Valid, int32(i))
		default:
			d.Test = append(d.Test, int32(i))
		}
	}
	if dim == 0 {
		d.Features = nil
	}
	return d
}

// GraphOnly returns d's graph alone, named name, as a graph-only format
// loads it.
func GraphOnly(d *Dataset, name, source string) *Dataset {
	return &Dataset{Name: name, NumNodes: d.NumNodes, Graph: d.Graph, Source: source}
}
