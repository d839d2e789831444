package graph

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Open loads a dataset from a spec in one of the registered formats
// (Format; SpecForms lists them): "embedded:cora", a directory in the OGB
// raw layout, a directory of .npy arrays, a .npz file, a binary file
// written by WriteBinary (recognised by its magic, whatever its name), a
// SNAP or CSV edge list, an R-MAT spec "rmat-<scale>[-...]" (used when no
// file of that name exists), and what plugins add. Any spec may end in
// "@random-<train>-<valid>-seed<k>", which replaces the dataset's split
// with a generated one (RandomSplit; a stored split of that name wins), or,
// for a format with named splits, "@<split>". A binary file stays mapped
// for the life of the process: use OpenBinary to unmap it.
//
// Open applies the default memory budget and cannot be interrupted; see
// OpenContext.
func Open(spec string) (*Dataset, error) {
	return open(spec, LoadOptions{Ctx: context.Background()})
}

// open is Open with the options o: detection over the registry, then
// the split after '@'.
func open(spec string, o LoadOptions) (*Dataset, error) {
	if spec == "" {
		return nil, fmt.Errorf("empty dataset spec; want %s: %w", SpecForms(), ErrMissing)
	}
	o.Budget = BudgetOr(o.Budget)
	f, st, err := Detect(spec)
	if err != nil || f != nil {
		if err != nil {
			return nil, err
		}
		return openWith(f, spec, o)
	}
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		base, split := spec[:i], spec[i+1:]
		bf, _, err := Detect(base)
		if err != nil {
			return nil, err
		}
		if bf != nil {
			if split == "" {
				return nil, FileErrorf(ErrFormat, spec, 0, 0, "empty split name after '@'; write <dataset>@<split>")
			}
			return openSplit(bf, base, split, o)
		}
	}
	if st != nil && !st.IsDir() {
		return nil, FileErrorf(ErrFormat, spec, 0, 0, "unknown dataset file type %q; a dataset spec is %s", filepath.Ext(spec), SpecForms())
	}
	return nil, FileErrorf(ErrMissing, spec, 0, 0, "no such file or directory; a dataset spec is %s", SpecForms())
}

// openWith opens spec with f, first holding a format that checks no
// sizes to the size of its files.
func openWith(f Format, spec string, o LoadOptions) (*Dataset, error) {
	if !f.Supports().Budget {
		if err := CheckBudget(spec, "loading its files whole", SpecBytes(spec), o.Budget); err != nil {
			return nil, err
		}
	}
	return f.Open(spec, o)
}

// StoredSplitter is a Format with named splits that can tell whether a
// split of a name is stored: a stored "random-..." split wins over the
// generated one of that name.
type StoredSplitter interface {
	HasSplit(spec, name string) bool
}

// openSplit opens base with f and the split named split, as f declares:
// a named split when it has them, otherwise only a generated one.
func openSplit(f Format, base, split string, o LoadOptions) (*Dataset, error) {
	spec := base + "@" + split
	rs, isRandom, err := ParseRandomSplit(split)
	if err != nil {
		return nil, FileErrorf(ErrFormat, spec, 0, 0, "%v", err)
	}
	sup := f.Supports()
	if !isRandom {
		if !sup.NamedSplits {
			return nil, FileErrorf(ErrFormat, spec, 0, 0, "split %q: %s has no named splits; only a generated split random-<train>-<valid>-seed<k> can follow '@': drop \"@%s\" or generate one (e.g. @random-20-30-seed0)",
				split, sup.Spec, split)
		}
		o.Split = split
		return openWith(f, base, o)
	}
	if ss, ok := f.(StoredSplitter); ok && ss.HasSplit(base, split) {
		o.Split = split // the stored split of that name
		return openWith(f, base, o)
	}
	if sup.NamedSplits {
		o.Split = NoSplit
	}
	d, err := openWith(f, base, o)
	if err != nil {
		return nil, err
	}
	if err := rs.Apply(d); err != nil {
		return nil, FileErrorf(ErrSplit, spec, 0, 0, "%v; give labels (see docs/datasets.md)", err)
	}
	return d, nil
}

// FileExists reports whether path is an existing regular file.
func FileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// IsDir reports whether path is an existing directory.
func IsDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
