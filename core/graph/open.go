package graph

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// specForms lists the dataset specs Open accepts, for error messages.
const specForms = "embedded:<name> (e.g. embedded:cora), a directory in the OGB raw layout (optionally <dir>@<split>), " +
	"a directory of .npy arrays (edge_index.npy, labels.npy, ...), a .strata binary written by `strata convert`, " +
	"a SNAP edge list (.txt, .txt.gz, .el, .edges, .tsv) or rmat-<scale>[-<edgefactor>-<feat>-<classes>-<seed>]"

// Open loads a dataset from a spec: "embedded:cora"; a directory in the OGB
// raw layout, optionally followed by "@<split>"; a directory of .npy arrays;
// a binary file written by WriteBinary (recognised by its magic, whatever
// its name); a SNAP edge list (.txt, .txt.gz, .el, .edges, .tsv, optionally
// .gz); or an R-MAT spec "rmat-<scale>[-<edgefactor>-<feat>-<classes>-<seed>]"
// (used when no file of that name exists). A binary file stays mapped for
// the life of the process: use OpenBinary to unmap it.
//
// Open applies the default memory budget and cannot be interrupted; see
// OpenContext.
func Open(spec string) (*Dataset, error) { return open(spec, 0) }

// open is Open with a memory budget in bytes (0: DefaultMaxMemory).
func open(spec string, budget int64) (*Dataset, error) {
	if spec == "" {
		return nil, fmt.Errorf("empty dataset spec; want %s: %w", specForms, ErrMissing)
	}
	if name, ok := strings.CutPrefix(spec, "embedded:"); ok {
		return LoadEmbedded(name)
	}
	if st, err := os.Stat(spec); err == nil {
		if err := checkRegular(spec, st); err != nil {
			return nil, err
		}
		if st.IsDir() {
			return openDir(spec, "", budget)
		}
		return openFile(spec, budget)
	}
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		dir, split := spec[:i], spec[i+1:]
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			if split == "" {
				return nil, ferr(ErrFormat, spec, 0, 0, "empty split name after '@'; write <dir>@<split>")
			}
			return openDir(dir, split, budget)
		}
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

// openDir loads a dataset directory: OGB raw layout or .npy arrays.
func openDir(dir, split string, budget int64) (*Dataset, error) {
	if fileExists(filepath.Join(dir, "edge_index.npy")) && !isDir(filepath.Join(dir, "raw")) {
		if split != "" {
			return nil, ferr(ErrFormat, dir, 0, 0, "a .npy dataset directory has no named splits; drop \"@%s\"", split)
		}
		return LoadNPYDir(dir)
	}
	if !isDir(filepath.Join(dir, "raw")) {
		return nil, ferr(ErrMissing, filepath.Join(dir, "raw"), 0, 0,
			"directory does not exist, and there is no edge_index.npy either; %s", ogbLayout)
	}
	return loadOGBDir(dir, split, budget)
}

// openFile loads a single-file dataset: binary or SNAP edge list.
func openFile(path string, budget int64) (*Dataset, error) {
	if IsBinary(path) {
		d, _, err := openBinary(path, budget)
		return d, err
	}
	lower := strings.ToLower(strings.TrimSuffix(path, ".gz"))
	switch filepath.Ext(lower) {
	case ".strata":
		d, _, err := openBinary(path, budget) // reports the bad magic
		return d, err
	case ".txt", ".el", ".edges", ".tsv", ".edgelist":
		return LoadSNAP(path)
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
