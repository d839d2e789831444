package formats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/safefile"
)

// ogbLayout describes the expected directory layout, for error messages.
const ogbLayout = "an OGB node-property dataset directory holds raw/{edge,node-label,num-node-list,num-edge-list}.csv.gz, " +
	"optionally raw/node-feat.csv.gz, and split/<name>/{train,valid,test}.csv.gz (plain .csv files are accepted too)"

// noSplit, as a split name, reads no split (a generated one replaces it).
const noSplit = graph.NoSplit

// ogbSource is a dataset directory as a file system plus the prefix used to
// name its files in error messages.
type ogbSource struct {
	fsys   fs.FS
	label  func(rel string) string
	budget int64 // memory budget in bytes (0: DefaultMaxMemory)
	// keep: read only the feature rows of the nodes rows, in that order
	// (WithFeatureRows); the other lines are counted, not parsed.
	rows []int32
	keep bool
}

// LoadOGB loads a dataset stored in the OGB node-property "raw" layout in
// dir (see ogbLayout). split names the directory under split/; "" picks the
// only one (a dataset without split/ gets empty splits). For each file the
// .csv.gz form is used, or the plain .csv when the .gz is absent. Node
// features are optional (FeatDim 0 when raw/node-feat is absent). Edges are
// stored as given: the line "src,dst" puts src in row dst.
func LoadOGB(dir, split string) (*graph.Dataset, error) {
	return loadOGBDir(dir, split, graph.LoadOptions{})
}

// loadOGBDir is LoadOGB with the options o (a memory budget, the
// feature rows to keep).
func loadOGBDir(dir, split string, o graph.LoadOptions) (*graph.Dataset, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, graph.FileErrorf(graph.ErrMissing, dir, 0, 0, "dataset directory does not exist; %s", ogbLayout)
	}
	if !st.IsDir() {
		return nil, graph.FileErrorf(graph.ErrFormat, dir, 0, 0, "not a directory; %s", ogbLayout)
	}
	src := ogbSource{fsys: safefile.DirFS(dir), label: func(rel string) string {
		return filepath.Join(dir, filepath.FromSlash(rel))
	}, budget: o.Budget, rows: o.Rows, keep: o.Keep}
	d, err := loadOGB(src, split)
	if err != nil {
		return nil, err
	}
	d.Name = filepath.Base(filepath.Clean(dir))
	d.Source = dir
	d.Citation = readCitation(src.fsys, d.Name)
	return d, nil
}

// LoadOGBFS loads a dataset in the OGB raw layout from the root of fsys.
// label names the dataset in error messages and in Source (files are
// reported as "<label>/raw/edge.csv.gz"); the dataset Name is the last
// element of label.
func LoadOGBFS(fsys fs.FS, label, split string) (*graph.Dataset, error) {
	return loadOGBFS(fsys, label, split, graph.LoadOptions{})
}

// loadOGBFS is LoadOGBFS with the options o (a memory budget, the
// feature rows to keep).
func loadOGBFS(fsys fs.FS, label, split string, o graph.LoadOptions) (*graph.Dataset, error) {
	src := ogbSource{fsys: fsys, label: func(rel string) string { return label + "/" + rel }, budget: o.Budget, rows: o.Rows, keep: o.Keep}
	d, err := loadOGB(src, split)
	if err != nil {
		return nil, err
	}
	d.Name = path.Base(strings.TrimPrefix(label, "embedded:"))
	d.Source = label
	d.Citation = readCitation(fsys, d.Name)
	return d, nil
}

func loadOGB(src ogbSource, split string) (*graph.Dataset, error) {
	// Resolve the split first: a bad split name should not cost a full parse.
	splitDir, err := chooseSplit(src, split)
	if err != nil {
		return nil, err
	}
	n64, _, err := readCount(src, "raw/num-node-list", true)
	if err != nil {
		return nil, err
	}
	if err := checkNodeCount(src, n64); err != nil {
		return nil, err
	}
	n := int(n64)
	m64, haveM, err := readCount(src, "raw/num-edge-list", false)
	if err != nil {
		return nil, err
	}
	g, err := readEdges(src, n, m64, haveM)
	if err != nil {
		return nil, err
	}
	labels, classes, err := readLabels(src, n)
	if err != nil {
		return nil, err
	}
	feats, dim, err := readFeatures(src, n)
	if err != nil {
		return nil, err
	}
	d := &graph.Dataset{NumNodes: n, Graph: g, Features: feats, FeatDim: dim, Labels: labels, NumClasses: classes}
	if src.keep {
		d.FeatureNodes = src.rows
	}
	if splitDir != "" {
		if err := readSplits(src, splitDir, d); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// checkNodeCount checks num-node-list's count against the memory budget
// and against what the label file can hold (a line per node, 2 bytes at
// least), before anything of that size is allocated.
func checkNodeCount(src ogbSource, n int64) error {
	budget := src.budget
	if budget <= 0 {
		budget = graph.DefaultMaxMemory()
	}
	name := src.label("raw/num-node-list.csv.gz")
	for _, rel := range []string{"raw/num-node-list.csv.gz", "raw/num-node-list.csv"} {
		if _, err := fs.Stat(src.fsys, rel); err == nil {
			name = src.label(rel)
			break
		}
	}
	if err := graph.CheckBudget(name, fmt.Sprintf("%d nodes", n), n*graph.BytesPerNode, budget); err != nil {
		return err
	}
	for _, rel := range []string{"raw/node-label.csv.gz", "raw/node-label.csv"} {
		st, err := fs.Stat(src.fsys, rel)
		if err != nil {
			continue
		}
		if st.Size() == 0 {
			break // readLabels reports the empty file
		}
		capacity := st.Size() / 2 // "k\n" per node at least
		if strings.HasSuffix(rel, ".gz") {
			capacity = st.Size() * graph.MaxGzipRatio / 2
		}
		if n > capacity {
			return graph.FileErrorf(graph.ErrCount, name, 1, 0, "says %d nodes, but %s (%d bytes) can hold at most %d label lines: fix the count or regenerate the files",
				n, src.label(rel), st.Size(), capacity)
		}
		break
	}
	return nil
}

// openCSV opens rel+".csv.gz", or rel+".csv" when the .gz is absent.
func openCSV(src ogbSource, rel string) (*textFile, error) {
	gz := rel + ".csv.gz"
	tf, err := openText(src.fsys, gz, src.label(gz))
	if err == nil || !errors.Is(err, graph.ErrMissing) {
		return tf, err
	}
	plain := rel + ".csv"
	if _, serr := fs.Stat(src.fsys, plain); serr == nil {
		return openText(src.fsys, plain, src.label(plain))
	}
	return nil, graph.FileErrorf(graph.ErrMissing, src.label(gz), 0, 0, "file does not exist (nor %s); %s", path.Base(plain), ogbLayout)
}

// SplitDir is the split chosen under the split/ directory of a dataset
// root in the OGB layout (a data.npz in raw/ reads its splits this way).
type SplitDir struct {
	src ogbSource
	// Dir is the split directory relative to the root ("" for none).
	Dir string
}

// ChooseSplit picks the split named split (as LoadOptions.Split: "" the
// only one, graph.NoSplit none) under root/split/.
func ChooseSplit(root, split string) (SplitDir, error) {
	src := ogbSource{fsys: safefile.DirFS(root), label: func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }}
	dir, err := chooseSplit(src, split)
	return SplitDir{src: src, Dir: dir}, err
}

// Read reads the split's train/valid/test into d, checked as the OGB
// layout's are.
func (s SplitDir) Read(d *graph.Dataset) error { return readSplits(s.src, s.Dir, d) }

// chooseSplit returns the split directory to read ("" for none).
func chooseSplit(src ogbSource, split string) (string, error) {
	if split == noSplit {
		return "", nil
	}
	entries, err := fs.ReadDir(src.fsys, "split")
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if split == "" {
		switch {
		case err != nil || len(names) == 0:
			return "", nil
		case len(names) > 1:
			return "", graph.FileErrorf(graph.ErrMissing, src.label("split"), 0, 0,
				"%d splits (%s): choose one with <dir>@<split>", len(names), strings.Join(names, ", "))
		}
		return "split/" + names[0], nil
	}
	if strings.ContainsAny(split, `/\`) || split == "." || split == ".." {
		return "", graph.FileErrorf(graph.ErrFormat, src.label("split/"+split), 0, 0, "invalid split name %q", split)
	}
	if !slices.Contains(names, split) {
		avail := "none"
		if len(names) > 0 {
			avail = strings.Join(names, ", ")
		}
		return "", graph.FileErrorf(graph.ErrMissing, src.label("split/"+split), 0, 0,
			"split %q does not exist (available: %s)", split, avail)
	}
	return "split/" + split, nil
}

// readCount reads a file holding one non-negative integer.
func readCount(src ogbSource, rel string, required bool) (int64, bool, error) {
	tf, err := openCSV(src, rel)
	if err != nil {
		if !required && errors.Is(err, graph.ErrMissing) {
			return 0, false, nil
		}
		return 0, false, err
	}
	defer tf.Close()
	var vals []int64
	var lines []int
	_, err = scanChunks(tf, 1, func(c *lineChunk) error {
		data, ln := c.data, c.line
		for len(data) > 0 {
			var line []byte
			line, data = nextLine(data)
			if !isBlank(line) {
				v, ok := parseInt(line)
				if !ok {
					return graph.FileErrorf(graph.ErrFormat, tf.name, ln, 0, "%s is not an integer; the file must hold one non-negative integer", quoteField(line))
				}
				vals = append(vals, v)
				lines = append(lines, ln)
			}
			ln++
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	switch {
	case len(vals) == 0:
		return 0, false, graph.FileErrorf(graph.ErrFormat, tf.name, 0, 0, "empty file; it must hold one non-negative integer")
	case len(vals) > 1:
		return 0, false, graph.FileErrorf(graph.ErrFormat, tf.name, lines[1], 0,
			"%d values; a node-property dataset has one graph, so the file must hold one integer", len(vals))
	case vals[0] < 0 || vals[0] > graph.MaxNodes:
		return 0, false, graph.FileErrorf(graph.ErrRange, tf.name, lines[0], 0, "count %d outside [0,%d]", vals[0], int64(graph.MaxNodes))
	}
	return vals[0], true, nil
}

// readEdges reads raw/edge: one "src,dst" line per edge, ids in [0,n).
// Blank lines are skipped.
func readEdges(src ogbSource, n int, want int64, check bool) (*graph.CSR, error) {
	tf, err := openCSV(src, "raw/edge")
	if err != nil {
		return nil, err
	}
	defer tf.Close()
	var mu sync.Mutex
	var parts [][]int64 // per chunk: interleaved src, dst
	_, err = scanChunks(tf, graph.NumWorkers(), func(c *lineChunk) error {
		out := make([]int64, 0, len(c.data)/4)
		data, ln := c.data, c.line
		var fb [3][]byte
		for len(data) > 0 {
			var line []byte
			line, data = nextLine(data)
			if !isBlank(line) {
				f, nf := splitFields(line, ',', fb[:0])
				if nf != 2 {
					return graph.FileErrorf(graph.ErrFormat, tf.name, ln, 0, "%s, expected 2 (src,dst); fix the line or regenerate the file", plural(nf, "column"))
				}
				var ids [2]int64
				for k := 0; k < 2; k++ {
					v, ok := parseInt(f[k])
					if !ok {
						return graph.FileErrorf(graph.ErrFormat, tf.name, ln, k+1, "%s is not an integer; fix the value or regenerate the file", quoteField(f[k]))
					}
					if v < 0 || v >= int64(n) {
						return graph.FileErrorf(graph.ErrRange, tf.name, ln, k+1, "node id %d outside [0,%d) (num-node-list says %d nodes)", v, n, n)
					}
					ids[k] = v
				}
				out = append(out, ids[0], ids[1])
			}
			ln++
		}
		mu.Lock()
		for len(parts) <= c.seq {
			parts = append(parts, nil)
		}
		parts[c.seq] = out
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	var m int64
	for _, p := range parts {
		m += int64(len(p) / 2)
	}
	if check && m != want {
		return nil, graph.FileErrorf(graph.ErrCount, tf.name, 0, 0, "%d edges but %s says %d; the files are out of sync: regenerate them",
			m, path.Base(src.label("raw/num-edge-list.csv.gz")), want)
	}
	return edgesToCSR(n, parts, m), nil
}

// edgesToCSR builds the CSR (row dst lists src, in file order) from chunks
// of interleaved (src, dst) pairs.
func edgesToCSR(n int, parts [][]int64, m int64) *graph.CSR {
	if n <= math.MaxInt32 {
		dst, srcs := make([]int32, 0, m), make([]int32, 0, m)
		for _, p := range parts {
			for i := 0; i < len(p); i += 2 {
				srcs = append(srcs, int32(p[i]))
				dst = append(dst, int32(p[i+1]))
			}
		}
		indptr, cols := graph.GroupEdges(n, dst, srcs)
		return graph.MakeCSR(n, n, indptr, cols)
	}
	dst, srcs := make([]int64, 0, m), make([]int64, 0, m)
	for _, p := range parts {
		for i := 0; i < len(p); i += 2 {
			srcs = append(srcs, p[i])
			dst = append(dst, p[i+1])
		}
	}
	indptr, cols := graph.GroupEdges(n, dst, srcs)
	return graph.MakeCSR(n, n, indptr, cols)
}

// parseLabel parses a label field: an integer, an integral float ("3.0"),
// or "nan" (unlabeled, as some OGB exports write it).
func parseLabel(b []byte) (int64, bool) {
	if v, ok := parseInt(b); ok {
		return v, true
	}
	s := strings.ToLower(strings.TrimSpace(string(b)))
	if s == "nan" {
		return -1, true
	}
	if f, ok := parseFloatSlow(b); ok && f == float32(math.Trunc(float64(f))) && math.Abs(float64(f)) < 1<<24 {
		return int64(f), true
	}
	return 0, false
}

// readLabels reads raw/node-label: line k holds the label of node k-1.
func readLabels(src ogbSource, n int) ([]int32, int, error) {
	tf, err := openCSV(src, "raw/node-label")
	if err != nil {
		return nil, 0, err
	}
	defer tf.Close()
	labels := make([]int32, n)
	var mu sync.Mutex
	maxLabel := int64(-1)
	lines, err := scanChunks(tf, graph.NumWorkers(), func(c *lineChunk) error {
		data, ln := c.data, c.line
		local := int64(-1)
		for len(data) > 0 {
			var line []byte
			line, data = nextLine(data)
			if ln > n {
				return graph.FileErrorf(graph.ErrCount, tf.name, ln, 0, "more than %d lines, but num-node-list says %d nodes (line k holds the label of node k-1)", n, n)
			}
			if isBlank(line) {
				return graph.FileErrorf(graph.ErrFormat, tf.name, ln, 0, "empty line; line k must hold the label of node k-1 (-1 if unlabeled)")
			}
			if k := splitCount(line, ','); k != 1 {
				return graph.FileErrorf(graph.ErrFormat, tf.name, ln, 0, "%s, expected 1 (one integer label per node)", plural(k, "column"))
			}
			v, ok := parseLabel(line)
			if !ok {
				return graph.FileErrorf(graph.ErrFormat, tf.name, ln, 0, "%s is not an integer label; fix the value or regenerate the file", quoteField(line))
			}
			if v < -1 {
				return graph.FileErrorf(graph.ErrRange, tf.name, ln, 0, "label %d is negative; use -1 for an unlabeled node", v)
			}
			if v >= int64(max(n, 2)) || v >= math.MaxInt32 {
				return graph.FileErrorf(graph.ErrRange, tf.name, ln, 0, "label %d is out of range: labels are class indices 0..C-1, and there cannot be more classes than the %d nodes", v, n)
			}
			labels[ln-1] = int32(v)
			local = max(local, v)
			ln++
		}
		mu.Lock()
		maxLabel = max(maxLabel, local)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if lines != n {
		return nil, 0, graph.FileErrorf(graph.ErrCount, tf.name, 0, 0, "%d lines, but num-node-list says %d nodes (one label per node)", lines, n)
	}
	return labels, int(maxLabel + 1), nil
}

// splitCount returns the number of sep-separated fields in line.
func splitCount(line []byte, sep byte) int {
	k := 1
	for _, c := range line {
		if c == sep {
			k++
		}
	}
	return k
}

// readFeatures reads the optional raw/node-feat: line k holds the
// comma-separated features of node k-1; every line has the same width.
func readFeatures(src ogbSource, n int) ([]float32, int, error) {
	tf, err := openCSV(src, "raw/node-feat")
	if err != nil {
		if errors.Is(err, graph.ErrMissing) {
			return nil, 0, nil
		}
		return nil, 0, err
	}
	defer tf.Close()
	// The first line fixes the width; read it before the parallel parse.
	br := bufio.NewReaderSize(tf.r, 64<<10)
	first, rerr := br.ReadBytes('\n')
	if rerr != nil && rerr != io.EOF {
		return nil, 0, readError(tf.name, 0, rerr)
	}
	if len(first) == 0 {
		if n == 0 {
			return nil, 0, nil
		}
		return nil, 0, graph.FileErrorf(graph.ErrFormat, tf.name, 0, 0, "empty file, but num-node-list says %d nodes; remove the file if the dataset has no features", n)
	}
	line1, _ := nextLine(first)
	if isBlank(line1) {
		return nil, 0, graph.FileErrorf(graph.ErrFormat, tf.name, 1, 0, "empty line; line k must hold the features of node k-1")
	}
	dim := splitCount(line1, ',')
	if int64(n)*int64(dim) > graph.MaxFeatureValues {
		return nil, 0, graph.FileErrorf(graph.ErrRange, tf.name, 1, 0, "%d nodes x %d features is too large (more than %d values)", n, dim, int64(graph.MaxFeatureValues))
	}
	budget := src.budget
	if budget <= 0 {
		budget = graph.DefaultMaxMemory()
	}
	kept := n // the rows stored
	var at []int32
	if src.keep {
		if err := graph.CheckFeatureRows(src.rows, n); err != nil {
			return nil, 0, err
		}
		if kept = len(src.rows); kept == 0 {
			return []float32{}, dim, nil // the width only: no row kept, nothing more to read
		}
		at = make([]int32, n) // node -> its place in rows + 1 (0: not kept)
		for i, v := range src.rows {
			at[v] = int32(i + 1)
		}
	}
	if err := graph.CheckBudget(tf.name, fmt.Sprintf("%d nodes x %d features", kept, dim), int64(kept)*int64(dim)*4, budget); err != nil {
		return nil, 0, err
	}
	feats := make([]float32, kept*dim)
	body := &textFile{name: tf.name, r: io.MultiReader(bytes.NewReader(first), br), c: tf.c}
	lines, err := scanChunks(body, graph.NumWorkers(), func(c *lineChunk) error {
		return parseFeatureChunk(c, tf.name, n, dim, feats, at)
	})
	if err != nil {
		return nil, 0, err
	}
	if lines != n {
		return nil, 0, graph.FileErrorf(graph.ErrCount, tf.name, 0, 0, "%d lines, but num-node-list says %d nodes (one feature row per node)", lines, n)
	}
	if n == 0 {
		return nil, 0, nil
	}
	return feats, dim, nil
}

// parseFeatureChunk parses feature rows into feats (pre-zeroed): row k-1
// of the file into row k-1, or with at (WithFeatureRows) into row
// at[k-1]-1, and not at all when at[k-1] is 0.
func parseFeatureChunk(c *lineChunk, file string, n, dim int, feats []float32, at []int32) error {
	data, ln := c.data, c.line
	for len(data) > 0 {
		var line []byte
		line, data = nextLine(data)
		if ln > n {
			return graph.FileErrorf(graph.ErrCount, file, ln, 0, "more than %d lines, but num-node-list says %d nodes (one feature row per node)", n, n)
		}
		if isBlank(line) {
			return graph.FileErrorf(graph.ErrFormat, file, ln, 0, "empty line; line k must hold the features of node k-1")
		}
		r := ln - 1
		if at != nil {
			if r = int(at[ln-1]) - 1; r < 0 {
				ln++ // another rank's row: counted only
				continue
			}
		}
		row := feats[r*dim : (r+1)*dim]
		col := 0
		i := 0
		for {
			if col == dim {
				return graph.FileErrorf(graph.ErrFormat, file, ln, 0, "%s, expected %d like line 1; every feature row must have the same width",
					plural(col+splitCount(line[i:], ','), "value"), dim)
			}
			rest := line[i:]
			if len(rest) >= 1 && rest[0] == '0' && (len(rest) == 1 || rest[1] == ',') {
				i++ // zero: the row is pre-zeroed
			} else {
				v, k, ok := parseFloatPrefix(rest)
				if !ok || (k < len(rest) && rest[k] != ',') {
					end := len(rest)
					for j, b := range rest {
						if b == ',' {
							end = j
							break
						}
					}
					if v, ok = parseFloatSlow(rest[:end]); !ok {
						if end == 0 {
							return graph.FileErrorf(graph.ErrFormat, file, ln, col+1, "empty value; fix the line or regenerate the file")
						}
						return graph.FileErrorf(graph.ErrFormat, file, ln, col+1, "%s is not a number; fix the value or regenerate the file", quoteField(rest[:end]))
					}
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						return graph.FileErrorf(graph.ErrRange, file, ln, col+1, "%s is not a finite float32 (NaN and infinities would poison training); fix the value or regenerate the file", quoteField(rest[:end]))
					}
					k = end
				}
				row[col] = v
				i += k
			}
			col++
			if i >= len(line) {
				break
			}
			i++ // the comma
			if i == len(line) {
				// Trailing comma: an empty last value.
				if col == dim {
					return graph.FileErrorf(graph.ErrFormat, file, ln, 0, "%s, expected %d like line 1 (trailing comma); every feature row must have the same width", plural(col+1, "value"), dim)
				}
				return graph.FileErrorf(graph.ErrFormat, file, ln, col+1, "empty value; fix the line or regenerate the file")
			}
		}
		if col != dim {
			return graph.FileErrorf(graph.ErrFormat, file, ln, 0, "%s, expected %d like line 1; every feature row must have the same width", plural(col, "value"), dim)
		}
		ln++
	}
	return nil
}

// readSplits reads train/valid/test of a split directory into d, checking
// that ids are in range, unique, disjoint across splits and labeled.
func readSplits(src ogbSource, dir string, d *graph.Dataset) error {
	n := d.NumNodes
	owner := make([]int8, n)  // 1 + split index
	where := make([]int32, n) // line of the node's first occurrence
	var out [3][]int32
	for si := 0; si < 3; si++ {
		rel := dir + "/" + graph.SplitName(si)
		tf, err := openCSV(src, rel)
		if err != nil {
			return err
		}
		ids := []int32{}
		_, err = scanChunks(tf, 1, func(c *lineChunk) error {
			data, ln := c.data, c.line
			for len(data) > 0 {
				var line []byte
				line, data = nextLine(data)
				if !isBlank(line) {
					if k := splitCount(line, ','); k != 1 {
						return graph.FileErrorf(graph.ErrFormat, tf.name, ln, 0, "%s, expected 1 (one node id per line)", plural(k, "column"))
					}
					v, ok := parseInt(line)
					if !ok {
						return graph.FileErrorf(graph.ErrFormat, tf.name, ln, 0, "%s is not an integer node id; fix the value or regenerate the file", quoteField(line))
					}
					if v < 0 || v >= int64(n) {
						return graph.FileErrorf(graph.ErrRange, tf.name, ln, 0, "node id %d outside [0,%d)", v, n)
					}
					if o := owner[v]; o != 0 {
						if int(o) == si+1 {
							return graph.FileErrorf(graph.ErrSplit, tf.name, ln, 0, "node %d is listed twice (first at line %d); remove the duplicate", v, where[v])
						}
						return graph.FileErrorf(graph.ErrSplit, tf.name, ln, 0, "node %d is also in the %s split (%s:%d); splits must be disjoint",
							v, graph.SplitName(int(o)-1), path.Base(src.label(dir+"/"+graph.SplitName(int(o)-1)+".csv.gz")), where[v])
					}
					if d.Labels[v] < 0 {
						return graph.FileErrorf(graph.ErrSplit, tf.name, ln, 0, "node %d has no label (-1); unlabeled nodes cannot be in a split", v)
					}
					owner[v], where[v] = int8(si+1), int32(min(ln, math.MaxInt32))
					ids = append(ids, int32(v))
				}
				ln++
			}
			return nil
		})
		tf.Close()
		if err != nil {
			return err
		}
		slices.Sort(ids)
		out[si] = ids
	}
	d.Train, d.Valid, d.Test = out[0], out[1], out[2]
	return nil
}

// readCitation returns the citation of a dataset: the text of a CITATION
// file in the dataset directory if there is one, else the citation of the
// known benchmark of that name, else "".
func readCitation(fsys fs.FS, name string) string {
	for _, f := range []string{"CITATION", "CITATION.txt", "CITATION.md"} {
		if b, err := fs.ReadFile(fsys, f); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return graph.KnownCitation(name)
}

// ogbFormat is format.ogb: a directory in the OGB raw layout.
type ogbFormat struct{}

func init() { registry.Register(&ogbFormat{}) }

func (*ogbFormat) StrataModule() registry.ModuleInfo {
	return graph.FormatInfo("ogb", "a directory in the OGB node-property raw layout (raw/*.csv[.gz], split/<name>/), <dir>@<split> for a named split",
		func() *ogbFormat { return &ogbFormat{} })
}

// Detect takes any directory, last: it explains what the layout lacks.
func (*ogbFormat) Detect(_ string, st fs.FileInfo) int {
	if st != nil && st.IsDir() {
		return graph.DetectFallback
	}
	return 0
}

func (*ogbFormat) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	if !graph.IsDir(filepath.Join(spec, "raw")) {
		return nil, graph.FileErrorf(graph.ErrMissing, filepath.Join(spec, "raw"), 0, 0,
			"directory does not exist, and there is no edge_index.npy either; %s", ogbLayout)
	}
	return loadOGBDir(spec, o.Split, o)
}

func (*ogbFormat) HasSplit(spec, name string) bool {
	return graph.IsDir(filepath.Join(spec, "split", name))
}

func (*ogbFormat) Supports() graph.Support {
	return graph.Support{Spec: "a directory in the OGB raw layout (optionally <dir>@<split>)", NamedSplits: true, Rows: true, Budget: true}
}
