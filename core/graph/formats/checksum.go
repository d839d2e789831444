package formats

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"strata/core/graph"
	"strata/core/safefile"
)

// SourceFile is one file that opening a dataset spec reads.
type SourceFile struct {
	// Name is the file as the loaders name it in errors: a path, or
	// "embedded:cora/raw/edge.csv.gz" for a dataset inside the binary.
	Name string
	fsys fs.FS
	rel  string
}

// SHA256 returns the hex SHA-256 of the file's bytes and their count.
func (f SourceFile) SHA256() (string, int64, error) {
	r, err := f.fsys.Open(f.rel)
	if err != nil {
		return "", 0, err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", f.Name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// NPYDirEdgeLists are the comma-separated edge lists ("src,dst" lines,
// see LoadSNAP) a .npy directory may hold in place of edge_index.npy.
var NPYDirEdgeLists = []string{"edges.csv", "edges.csv.gz", "edge_list.csv", "edge_list.csv.gz"}

// IsNPYDir reports whether dir is a .npy directory (format.npy): it has
// no raw/ (a directory with both layouts is OGB's), and it holds
// edge_index.npy, or an edge list of NPYDirEdgeLists beside .npy arrays.
// A name of any file type counts (reading it then refuses a FIFO).
func IsNPYDir(dir string) bool {
	has := func(name string) bool { _, err := os.Lstat(filepath.Join(dir, name)); return err == nil }
	if graph.IsDir(filepath.Join(dir, "raw")) {
		return false
	}
	if has("edge_index.npy") {
		return true
	}
	arrays, _ := fs.Glob(os.DirFS(dir), "*.npy")
	return len(arrays) > 0 && slices.ContainsFunc(NPYDirEdgeLists, has)
}

// generatorFormat is a format that generates its dataset from the spec
// alone (rmat-..., synth:...): Generator describes it with every
// parameter, defaults filled in, for provenance.
type generatorFormat interface {
	Generator(spec string) (string, error)
}

// Sources lists the files that Open(spec) reads, in a fixed order: every
// raw/ file and the chosen split's files of an OGB-layout directory
// (embedded ones included), the .npy arrays of a .npy directory, or the
// file itself. A generated dataset (rmat-..., synth:...) reads no file: generator
// then describes it with every parameter, defaults filled in, and files is
// empty. Like Open, it fails on a spec that names nothing.
func Sources(spec string) (files []SourceFile, generator string, err error) {
	if name, ok := strings.CutPrefix(spec, "embedded:"); ok && !strings.Contains(name, "@") {
		if !slices.Contains(EmbeddedNames(), name) {
			return nil, "", graph.FileErrorf(graph.ErrMissing, spec, 0, 0, "no such embedded dataset (available: %s)", strings.Join(EmbeddedNames(), ", "))
		}
		sub, err := fs.Sub(embeddedData, "datasets/"+name)
		if err != nil {
			return nil, "", err
		}
		files, err := ogbSources(sub, spec, "")
		return files, "", err
	}
	dirSources := func(dir, split string) ([]SourceFile, error) {
		fsys := safefile.DirFS(dir)
		if IsNPYDir(dir) {
			files, err := globFiles(fsys, dir, "*.npy")
			for _, name := range NPYDirEdgeLists {
				if err == nil && graph.FileExists(filepath.Join(dir, name)) {
					var e []SourceFile
					e, err = globFiles(fsys, dir, name)
					files = append(files, e...)
				}
			}
			return files, err
		}
		return ogbSources(fsys, dir, split)
	}
	if i := strings.LastIndexByte(spec, '@'); i > 0 && !graph.FileExists(spec) && !graph.IsDir(filepath.Join(spec[:i], "split", spec[i+1:])) {
		if _, isRandom, _ := graph.ParseRandomSplit(spec[i+1:]); isRandom {
			// A generated split is drawn from the labels: the dataset's
			// files without any stored split are what it reads.
			if graph.IsDir(spec[:i]) {
				files, err := dirSources(spec[:i], noSplit)
				return files, "", err
			}
			return Sources(spec[:i])
		}
	}
	if st, err := os.Stat(spec); err == nil {
		if st.IsDir() {
			files, err := dirSources(spec, "")
			return files, "", err
		}
		return []SourceFile{{Name: spec, fsys: safefile.DirFS(filepath.Dir(spec)), rel: filepath.Base(spec)}}, "", nil
	}
	if i := strings.LastIndexByte(spec, '@'); i > 0 && graph.IsDir(spec[:i]) {
		files, err := dirSources(spec[:i], spec[i+1:])
		return files, "", err
	}
	if f, st, err := graph.Detect(spec); err == nil && st == nil {
		if gen, ok := f.(generatorFormat); ok {
			desc, err := gen.Generator(spec)
			return nil, desc, err
		}
	}
	return nil, "", graph.FileErrorf(graph.ErrMissing, spec, 0, 0, "no such file or directory; a dataset spec is %s", graph.SpecForms())
}

// ogbSources lists the raw/ files, the chosen split's files and a
// CITATION file of an OGB-layout dataset.
func ogbSources(fsys fs.FS, label, split string) ([]SourceFile, error) {
	src := ogbSource{fsys: fsys, label: func(rel string) string { return path.Join(label, rel) }}
	splitDir, err := chooseSplit(src, split)
	if err != nil {
		return nil, err
	}
	files, err := globFiles(fsys, label, "raw/*")
	if err != nil {
		return nil, err
	}
	if splitDir != "" {
		s, err := globFiles(fsys, label, splitDir+"/*")
		if err != nil {
			return nil, err
		}
		files = append(files, s...)
	}
	c, err := globFiles(fsys, label, "CITATION*")
	return append(files, c...), err
}

// globFiles lists the regular files of fsys matching pattern, sorted.
func globFiles(fsys fs.FS, label, pattern string) ([]SourceFile, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []SourceFile
	for _, n := range names {
		st, err := fs.Stat(fsys, n)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		name := filepath.Join(label, filepath.FromSlash(n))
		if strings.HasPrefix(label, "embedded:") {
			name = label + "/" + n
		}
		out = append(out, SourceFile{Name: name, fsys: fsys, rel: n})
	}
	return out, nil
}
