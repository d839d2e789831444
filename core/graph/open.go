package graph

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// specForms lists the dataset specs Open accepts, for error messages.
const specForms = "embedded:<name> (e.g. embedded:cora), a directory in the OGB raw layout (optionally <dir>@<split>), " +
	"a directory of .npy arrays (edge_index.npy, labels.npy, ...), a .npz file (Shchur et al. or OGB data.npz), " +
	"a .strata binary written by `strata convert`, a SNAP edge list (.txt, .txt.gz, .el, .edges, .tsv) or comma-separated .csv edge list " +
	"or rmat-<scale>[-<edgefactor>-<feat>-<classes>-<seed>]; any of them may end in @random-<train>-<valid>-seed<k> " +
	"(a generated split, see docs/datasets.md)"

// Open loads a dataset from a spec: "embedded:cora"; a directory in the OGB
// raw layout, optionally followed by "@<split>"; a directory of .npy arrays;
// a binary file written by WriteBinary (recognised by its magic, whatever
// its name); a SNAP edge list (.txt, .txt.gz, .el, .edges, .tsv, optionally
// .gz); or an R-MAT spec "rmat-<scale>[-<edgefactor>-<feat>-<classes>-<seed>]"
// (used when no file of that name exists); a .npz file (LoadNPZ) or a
// comma-separated edge list (.csv). Any spec may end in
// "@random-<train>-<valid>-seed<k>", which replaces the dataset's split with
// a generated one (RandomSplit; an OGB directory's split/<name> of that name
// wins). A binary file stays mapped for the life of the process: use
// OpenBinary to unmap it.
//
// Open applies the default memory budget and cannot be interrupted; see
// OpenContext.
func Open(spec string) (*Dataset, error) { return open(spec, loadOpts{}) }

// loadOpts are what OpenContext's context asks of the loaders: a memory
// budget in bytes (0: DefaultMaxMemory) and, with keep, only the feature
// rows of rows (WithFeatureRows).
type loadOpts struct {
	budget int64
	rows   []int32
	keep   bool
}

// open is Open with the options o.
func open(spec string, o loadOpts) (*Dataset, error) {
	budget := o.budget
	if spec == "" {
		return nil, fmt.Errorf("empty dataset spec; want %s: %w", specForms, ErrMissing)
	}
	if name, ok := strings.CutPrefix(spec, "embedded:"); ok {
		if i := strings.LastIndexByte(name, '@'); i > 0 {
			return openSplitWith(spec, func() (*Dataset, error) { return LoadEmbedded(name[:i]) }, name[i+1:])
		}
		return LoadEmbedded(name)
	}
	if st, err := os.Stat(spec); err == nil {
		if err := checkRegular(spec, st); err != nil {
			return nil, err
		}
		if st.IsDir() {
			return openDir(spec, "", o)
		}
		return openFile(spec, o)
	}
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		base, split := spec[:i], spec[i+1:]
		if st, err := os.Stat(base); err == nil {
			if split == "" {
				return nil, ferr(ErrFormat, spec, 0, 0, "empty split name after '@'; write <dataset>@<split>")
			}
			return openSplit(base, st.IsDir(), split, o)
		}
	}
	if strings.HasPrefix(spec, "rmat-") && strings.Contains(spec, "@") && !strings.ContainsAny(spec, `/\`) {
		i := strings.LastIndexByte(spec, '@')
		return openSplitWith(spec, func() (*Dataset, error) { return open(spec[:i], o) }, spec[i+1:])
	}
	if strings.HasPrefix(spec, "rmat-") && !strings.ContainsAny(spec, `/\`) {
		o, err := ParseRMATName(spec)
		if err != nil {
			return nil, err
		}
		if budget <= 0 {
			budget = DefaultMaxMemory()
		}
		n, ef := int64(1)<<o.Scale, int64(max(o.EdgeFactor, 16))
		if o.EdgeFactor > 0 {
			ef = int64(o.EdgeFactor)
		}
		// Features, per-node arrays, and the edges (generated pairs and CSR).
		need := n*(int64(o.FeatDim)*4+bytesPerNode) + n*ef*24
		if err := checkBudget(spec, "generating the graph", need, budget); err != nil {
			return nil, err
		}
		return RMAT(o)
	}
	return nil, ferr(ErrMissing, spec, 0, 0, "no such file or directory; a dataset spec is %s", specForms)
}

// openSplit opens base (a directory when dir) with the split named split.
func openSplit(base string, dir bool, split string, o loadOpts) (*Dataset, error) {
	rs, isRandom, err := ParseRandomSplit(split)
	if err != nil {
		return nil, ferr(ErrFormat, base+"@"+split, 0, 0, "%v", err)
	}
	if !isRandom {
		if dir {
			return openDir(base, split, o)
		}
		if strings.HasSuffix(strings.ToLower(base), ".npz") {
			return loadNPZ(base, split)
		}
		return nil, ferr(ErrFormat, base+"@"+split, 0, 0, "split %q: a single-file dataset has no named splits; generate one with @random-<train>-<valid>-seed<k> (e.g. @random-20-30-seed0)", split)
	}
	var d *Dataset
	switch {
	case dir && isDir(filepath.Join(base, "split", split)):
		return openDir(base, split, o) // the stored split of that name
	case dir:
		d, err = openDir(base, noSplit, o)
	default:
		d, err = openFile(base, o)
	}
	if err != nil {
		return nil, err
	}
	if err := rs.Apply(d); err != nil {
		return nil, ferr(ErrSplit, base+"@"+split, 0, 0, "%v; give labels (see docs/datasets.md)", err)
	}
	return d, nil
}

// openSplitWith loads a dataset with open and gives it the generated split
// named split (the only kind an embedded or R-MAT dataset can take).
func openSplitWith(spec string, open func() (*Dataset, error), split string) (*Dataset, error) {
	rs, isRandom, err := ParseRandomSplit(split)
	if err != nil {
		return nil, ferr(ErrFormat, spec, 0, 0, "%v", err)
	}
	if !isRandom {
		return nil, ferr(ErrFormat, spec, 0, 0, "split %q: only a generated split random-<train>-<valid>-seed<k> (e.g. random-20-30-seed0) can follow '@' here", split)
	}
	d, err := open()
	if err != nil {
		return nil, err
	}
	if err := rs.Apply(d); err != nil {
		return nil, ferr(ErrSplit, spec, 0, 0, "%v", err)
	}
	return d, nil
}

// openDir loads a dataset directory: OGB raw layout (text or data.npz) or
// .npy arrays. split noSplit reads no split at all.
func openDir(dir, split string, o loadOpts) (*Dataset, error) {
	if fileExists(filepath.Join(dir, "edge_index.npy")) && !isDir(filepath.Join(dir, "raw")) {
		if split != "" && split != noSplit {
			return nil, ferr(ErrFormat, dir, 0, 0, "a .npy dataset directory has no named splits; drop \"@%s\" or generate one with @random-<train>-<valid>-seed<k>", split)
		}
		return LoadNPYDir(dir)
	}
	if raw := filepath.Join(dir, "raw"); fileExists(filepath.Join(raw, "data.npz")) &&
		!fileExists(filepath.Join(raw, "edge.csv.gz")) && !fileExists(filepath.Join(raw, "edge.csv")) {
		return loadNPZ(filepath.Join(raw, "data.npz"), split)
	}
	if !isDir(filepath.Join(dir, "raw")) {
		return nil, ferr(ErrMissing, filepath.Join(dir, "raw"), 0, 0,
			"directory does not exist, and there is no edge_index.npy either; %s", ogbLayout)
	}
	return loadOGBDir(dir, split, o)
}

// openFile loads a single-file dataset: binary or SNAP edge list.
func openFile(path string, o loadOpts) (*Dataset, error) {
	if IsBinary(path) {
		d, _, err := openBinary(path, o.budget)
		return d, err
	}
	lower := strings.ToLower(strings.TrimSuffix(path, ".gz"))
	switch filepath.Ext(lower) {
	case ".strata":
		d, _, err := openBinary(path, o.budget) // reports the bad magic
		return d, err
	case ".txt", ".el", ".edges", ".tsv", ".edgelist", ".csv":
		return LoadSNAP(path)
	case ".npz":
		return LoadNPZ(path)
	case ".npy":
		return nil, ferr(ErrFormat, path, 0, 0, "a single .npy file is not a dataset; pass the directory that holds edge_index.npy")
	}
	return nil, ferr(ErrFormat, path, 0, 0, "unknown dataset file type %q; a dataset spec is %s", filepath.Ext(path), specForms)
}

// fileExists reports whether path is an existing regular file.
func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// isDir reports whether path is an existing directory.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
