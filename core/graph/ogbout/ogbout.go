// Package ogbout writes a dataset in the OGB node-property raw layout
// (formats.LoadOGB reads it back, and so does the PyTorch peers' data.py):
//
//	DIR/raw/edge.csv.gz            "src,dst" per stored edge (src in row dst)
//	DIR/raw/node-feat.csv.gz       the features of node k-1 on line k
//	DIR/raw/node-label.csv.gz      the label of node k-1 on line k (-1: none)
//	DIR/raw/num-node-list.csv.gz   the node count
//	DIR/raw/num-edge-list.csv.gz   the edge count (the lines of edge.csv.gz)
//	DIR/split/<SplitName>/{train,valid,test}.csv.gz   a node id per line
//
// Floats are written in the shortest form that parses back to the same
// float32. Every file is a multi-member gzip stream whose members are
// formatted and compressed in parallel; the whole directory is written
// under a temporary name next to DIR and renamed to DIR only when complete.
package ogbout

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"strata/core/graph"
	"strata/core/safefile"
)

// SplitName is the directory under split/ that holds the dataset's split
// (the reader picks the only one; data.py takes it as it finds no other).
const SplitName = "converted"

// Options tunes the writer.
type Options struct {
	// Level is the gzip level (0: gzip.HuffmanOnly, which writes the float
	// text of features 1.8x as fast as gzip.BestSpeed for 4% more bytes,
	// BenchmarkWriteDir).
	Level int
	// Workers formats and compresses that many blocks at once (0:
	// graph.NumWorkers()).
	Workers int
}

// Check reports what the layout cannot hold, before anything is written:
// edge weights and multi-label or regression targets. Errors wrap
// graph.ErrFormat.
func Check(d *graph.Dataset) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("not writing an invalid dataset: %w", err)
	}
	if d.Graph.Values != nil {
		return fmt.Errorf("the dataset has edge weights, which the OGB node-property raw layout cannot hold; convert --to npy or --to strata keeps them: %w", graph.ErrFormat)
	}
	if d.HasTargets() {
		return fmt.Errorf("the dataset has %s targets, which raw/node-label.csv.gz (one integer label per node) cannot hold; convert --to npy or --to strata keeps them: %w", d.Kind, graph.ErrFormat)
	}
	return nil
}

// TextBytes estimates the uncompressed size of what WriteDir writes for d.
func TextBytes(d *graph.Dataset) int64 {
	n := int64(d.NumNodes)
	idw := int64(len(strconv.Itoa(max(d.NumNodes, 1))))
	return d.Graph.NNZ()*(2*idw+2) + n*int64(d.FeatDim)*12 + n*3 + int64(len(d.Train)+len(d.Valid)+len(d.Test))*(idw+1)
}

// WriteDir writes d into the new directory dir, refusing a dir that
// exists (of any kind: nothing is replaced) and any output path that is
// one of inputs. The files are written into a temporary directory next to
// dir, renamed to dir when all are complete; on an error or when ctx is
// done the temporary directory is removed and dir does not exist. It
// returns the paths written, relative to dir.
func WriteDir(ctx context.Context, dir string, d *graph.Dataset, o Options, inputs ...string) (files []string, err error) {
	if err := Check(d); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if err := CheckOutput(dir, inputs...); err != nil {
		return nil, err
	}
	tmp, err := safefile.CreateTempDir(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			safefile.RemoveTree(tmp)
		}
	}()
	if o.Level == 0 {
		o.Level = gzip.HuffmanOnly
	}
	if o.Workers <= 0 {
		o.Workers = graph.NumWorkers()
	}
	w := &dirWriter{ctx: ctx, root: tmp, o: o, inputs: inputs}
	if files, err = w.writeAll(d); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", dir, err)
	}
	if err := safefile.CommitDir(tmp, dir); err != nil {
		return nil, err
	}
	return files, nil
}

// CheckOutput refuses an output directory that exists (a convert never
// replaces a dataset) or is one of inputs, and one whose parent is not a
// directory. Errors wrap safefile.ErrUnsafe.
func CheckOutput(dir string, inputs ...string) error {
	if st, err := os.Stat(filepath.Dir(dir)); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: its parent %s is not a directory: create it first: %w", dir, filepath.Dir(dir), safefile.ErrUnsafe)
	}
	if st, err := os.Lstat(dir); err == nil {
		what := "a directory"
		if !st.IsDir() {
			what = "a file"
		}
		return fmt.Errorf("%s exists (%s); --to ogb writes a new directory and never replaces one: remove it or give another -o: %w", dir, what, safefile.ErrUnsafe)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return safefile.CheckOutput(dir, inputs...)
}

// dirWriter writes the files of one dataset under root.
type dirWriter struct {
	ctx    context.Context
	root   string
	o      Options
	inputs []string
	files  []string
}

// writeAll writes every file of d; it returns their paths relative to root.
func (w *dirWriter) writeAll(d *graph.Dataset) ([]string, error) {
	if err := os.Mkdir(filepath.Join(w.root, "raw"), 0o755); err != nil {
		return nil, err
	}
	g, n := d.Graph, d.NumNodes
	m := g.NNZ()
	if err := w.write("raw/num-node-list.csv.gz", intLines(1, func(int) int64 { return int64(n) })); err != nil {
		return nil, err
	}
	if err := w.write("raw/num-edge-list.csv.gz", intLines(1, func(int) int64 { return m })); err != nil {
		return nil, err
	}
	if err := w.write("raw/edge.csv.gz", edgeLines(g)); err != nil {
		return nil, err
	}
	label := func(i int) int64 { return -1 }
	if d.Labels != nil {
		label = func(i int) int64 { return int64(d.Labels[i]) }
	}
	if err := w.write("raw/node-label.csv.gz", intLines(n, label)); err != nil {
		return nil, err
	}
	if d.FeatDim > 0 {
		if err := w.write("raw/node-feat.csv.gz", featureLines(d.Features, d.FeatDim)); err != nil {
			return nil, err
		}
	}
	if len(d.Train)+len(d.Valid)+len(d.Test) == 0 {
		return w.files, nil
	}
	splitDir := filepath.Join("split", SplitName)
	if err := os.MkdirAll(filepath.Join(w.root, splitDir), 0o755); err != nil {
		return nil, err
	}
	for i, ids := range [][]int32{d.Train, d.Valid, d.Test} {
		rel := filepath.ToSlash(filepath.Join(splitDir, graph.SplitName(i)+".csv.gz"))
		if err := w.write(rel, intLines(len(ids), func(k int) int64 { return int64(ids[k]) })); err != nil {
			return nil, err
		}
	}
	return w.files, nil
}

// write writes the gzipped text of blocks to rel under root, through
// safefile (a temporary file committed when complete).
func (w *dirWriter) write(rel string, b blocks) error {
	path := filepath.Join(w.root, filepath.FromSlash(rel))
	err := safefile.Write(path, func(f io.Writer) error {
		return writeGzip(w.ctx, f, b, w.o)
	}, w.inputs...)
	if err != nil {
		return err
	}
	w.files = append(w.files, rel)
	return nil
}

// blocks is a text file cut into n blocks: text appends block i to buf.
type blocks struct {
	n    int
	text func(i int, buf []byte) []byte
}

// Lines per block of the integer files, and the feature values per block.
const (
	intBlock  = 1 << 19
	featBlock = 1 << 19
)

// intLines is the text of count integers, value(k) on line k+1.
func intLines(count int, value func(k int) int64) blocks {
	return blocks{n: (count + intBlock - 1) / intBlock, text: func(i int, buf []byte) []byte {
		for k := i * intBlock; k < min(count, (i+1)*intBlock); k++ {
			buf = strconv.AppendInt(buf, value(k), 10)
			buf = append(buf, '\n')
		}
		return buf
	}}
}

// edgeLines is the text of g's stored edges: "col,row" per edge, row by
// row, so that the reader rebuilds the same rows in the same order.
func edgeLines(g *graph.CSR) blocks {
	m := g.NNZ()
	return blocks{n: int((m + intBlock - 1) / intBlock), text: func(i int, buf []byte) []byte {
		lo, hi := int64(i)*intBlock, min(m, int64(i+1)*intBlock)
		r := sort.Search(g.NumRows, func(r int) bool { return g.Indptr[r+1] > lo })
		for e := lo; e < hi; e++ {
			for g.Indptr[r+1] <= e {
				r++
			}
			buf = strconv.AppendInt(buf, g.Col(e), 10)
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, int64(r), 10)
			buf = append(buf, '\n')
		}
		return buf
	}}
}

// featureLines is the text of the feature rows: each value in the
// shortest form that parses back to the same float32 ("0" for zero).
func featureLines(feats []float32, dim int) blocks {
	n := len(feats) / dim
	rows := max(1, featBlock/dim)
	return blocks{n: (n + rows - 1) / rows, text: func(i int, buf []byte) []byte {
		for r := i * rows; r < min(n, (i+1)*rows); r++ {
			for j, v := range feats[r*dim : (r+1)*dim] {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = appendFloat(buf, v)
			}
			buf = append(buf, '\n')
		}
		return buf
	}}
}

// appendFloat appends v in the shortest form that parses back to v both
// directly as a float32 (strata) and through a float64 rounded to float32
// (numpy's text parser): the shortest float32 form, unless the float64
// nearest to it lies on the other side of a float32 rounding boundary
// (double rounding, as for 7.038531e-26), where the float64's shortest
// form is used, exact in a float64.
func appendFloat(buf []byte, v float32) []byte {
	if v == 0 && !math.Signbit(float64(v)) {
		return append(buf, '0')
	}
	at := len(buf)
	buf = strconv.AppendFloat(buf, float64(v), 'g', -1, 32)
	if x, err := strconv.ParseFloat(string(buf[at:]), 64); err == nil && float32(x) == v {
		return buf
	}
	return strconv.AppendFloat(buf[:at], float64(v), 'g', -1, 64)
}

// writeGzip writes b to w as a multi-member gzip stream (every gzip
// reader, Go's and Python's, concatenates the members): o.Workers blocks
// formatted and compressed at once, written in order. An empty b is one
// empty member, a valid gzip file.
func writeGzip(ctx context.Context, w io.Writer, b blocks, o Options) error {
	w = safefile.ContextWriter(ctx, w)
	if b.n == 0 {
		zw, err := gzip.NewWriterLevel(w, o.Level)
		if err != nil {
			return err
		}
		return zw.Close()
	}
	k := min(o.Workers, b.n)
	text := make([][]byte, k)
	out := make([]bytes.Buffer, k)
	zws := make([]*gzip.Writer, k)
	for j := range zws {
		zw, err := gzip.NewWriterLevel(&out[j], o.Level)
		if err != nil {
			return err
		}
		zws[j] = zw
	}
	for lo := 0; lo < b.n; lo += k {
		hi := min(b.n, lo+k)
		errs := make([]error, hi-lo)
		var wg sync.WaitGroup
		for j := range hi - lo {
			wg.Go(func() {
				text[j] = b.text(lo+j, text[j][:0])
				out[j].Reset()
				zws[j].Reset(&out[j])
				if _, err := zws[j].Write(text[j]); err != nil {
					errs[j] = err
					return
				}
				errs[j] = zws[j].Close()
			})
		}
		wg.Wait()
		for j := range hi - lo {
			if errs[j] != nil {
				return errs[j]
			}
			if _, err := w.Write(out[j].Bytes()); err != nil {
				return err
			}
		}
	}
	return nil
}
