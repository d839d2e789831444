package numpy

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"strata/core/graph"
	"strata/core/safefile"
)

// NPYNames are the files WriteNPYDir may write, in its order.
var NPYNames = []string{"edge_index.npy", "edge_weight.npy", "x.npy", "y.npy", "train_mask.npy", "val_mask.npy", "test_mask.npy"}

// WriteNPYDir exports d as a directory of .npy files in the names PyG and
// DGL users expect: edge_index.npy (int64, shape (2, E): row 0 the source,
// row 1 the target of each stored edge), edge_weight.npy (float32, (E,),
// the edges' weights in that order; absent without them), x.npy
// (float32, (N, D); absent
// without features), y.npy (int64, (N,); -1 = unlabeled; absent without
// labels; float32 (N, C) for multi-label or regression targets), and train_mask.npy, val_mask.npy, test_mask.npy (bool, (N,))
// when the dataset has a split. LoadNPYDir reads the directory back. dir is
// created if needed. It returns the paths written.
func WriteNPYDir(dir string, d *graph.Dataset) ([]string, error) {
	return WriteNPYDirContext(context.Background(), dir, d)
}

// WriteNPYDirContext is WriteNPYDir that stops when ctx is done, and
// refuses to write over any of inputs (safefile.CheckOutput). Every file
// goes to a temporary file first; the targets are replaced only when all
// of them are complete, so an error or an interrupt leaves the directory
// as it was (a directory it created is removed again).
func WriteNPYDirContext(ctx context.Context, dir string, d *graph.Dataset, inputs ...string) (written []string, err error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: not writing an invalid dataset: %w", dir, err)
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s exists and is not a directory; --to npy writes a directory of .npy files: %w", dir, graph.ErrFormat)
	}
	return writeNPYSet(ctx, dir, inputs, func(write npyWriter) error { return writeNPYFiles(d, write) })
}

// npyWriter writes the .npy file name of shape and dtype descr, whose
// data body writes.
type npyWriter func(name string, shape []int, descr string, body func(w io.Writer) error) error

// writeNPYSet writes the .npy files that fill writes into dir (created
// if needed), refusing any of inputs: each to a temporary file first,
// the targets replaced only when all are complete, so an error or an
// interrupt leaves dir as it was (a directory it created is removed
// again). It returns the paths written.
func writeNPYSet(ctx context.Context, dir string, inputs []string, fill func(write npyWriter) error) (written []string, err error) {
	created := !graph.IsDir(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	var files []*safefile.File
	defer func() {
		for _, f := range files {
			f.Abort() // no-op after the commit
		}
		if err != nil && created {
			safefile.RemoveDirIfEmpty(dir)
		}
	}()
	write := func(name string, shape []int, descr string, body func(w io.Writer) error) error {
		f, err := writeNPYFile(ctx, filepath.Join(dir, name), shape, descr, body, inputs)
		if f != nil {
			files = append(files, f)
		}
		return err
	}
	if err := fill(write); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return written, fmt.Errorf("writing %s: %w", dir, err)
		}
		if err := f.Commit(); err != nil {
			return written, fmt.Errorf("writing %s: %w", f.Name(), err)
		}
		written = append(written, f.Name())
	}
	return written, nil
}

// BothDirections returns the graph convert --to npy writes by default,
// PyG's edge_index convention for an undirected graph (what
// torch_geometric.utils.to_undirected gives): every stored edge i -> j
// and its reverse j -> i, each pair once, self loops kept once. Without
// self loops it is graph.Symmetrize(g); strata trains on it as on g with
// data.symmetrize = true, with either setting. loops counts the self
// loops kept.
func BothDirections(g *graph.CSR) (*graph.CSR, int) {
	s := graph.Symmetrize(g)
	loops := make([]int64, s.NumRows) // 1 + the first stored loop of each row, 0 for none
	k := 0
	for r := range g.NumRows {
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			if g.Col(e) == int64(r) && loops[r] == 0 {
				loops[r] = e + 1
				k++
			}
		}
	}
	if k == 0 {
		return s, 0
	}
	indptr := make([]int64, s.NumRows+1)
	cols := make([]int64, 0, s.NNZ()+int64(k))
	var vals []float32 // a weighted loop keeps its (first copy's) weight
	for r := range s.NumRows {
		at := s.Indptr[r+1] - s.Indptr[r]
		if loops[r] > 0 {
			at = int64(sort.Search(int(at), func(i int) bool { return s.Col(s.Indptr[r]+int64(i)) >= int64(r) }))
		}
		for i := s.Indptr[r]; i < s.Indptr[r+1]; i++ {
			if i-s.Indptr[r] == at {
				cols, vals = appendLoop(cols, vals, g, int64(r), loops[r]-1)
			}
			cols = append(cols, s.Col(i))
			if s.Values != nil {
				vals = append(vals, s.Values[i])
			}
		}
		if loops[r] > 0 && at == s.Indptr[r+1]-s.Indptr[r] {
			cols, vals = appendLoop(cols, vals, g, int64(r), loops[r]-1)
		}
		indptr[r+1] = int64(len(cols))
	}
	out := graph.MakeCSR(s.NumRows, s.NumCols, indptr, cols)
	out.Values = vals
	return out, k
}

// appendLoop appends the loop (r, r), stored as g's entry e, and its weight
// when g has weights.
func appendLoop(cols []int64, vals []float32, g *graph.CSR, r, e int64) ([]int64, []float32) {
	if g.Values != nil {
		vals = append(vals, g.Values[e])
	}
	return append(cols, r), vals
}

// writeNPYFiles writes the arrays of d through write, one call per file.
func writeNPYFiles(d *graph.Dataset, write func(name string, shape []int, descr string, body func(w io.Writer) error) error) error {
	g := d.Graph
	m := int(g.NNZ())
	err := write("edge_index.npy", []int{2, m}, "<i8", func(w io.Writer) error {
		var b [8]byte
		for r := 0; r < g.NumRows; r++ { // sources: the columns
			for k := g.Indptr[r]; k < g.Indptr[r+1]; k++ {
				binary.LittleEndian.PutUint64(b[:], uint64(g.Col(k)))
				if _, err := w.Write(b[:]); err != nil {
					return err
				}
			}
		}
		for r := 0; r < g.NumRows; r++ { // targets: the rows
			binary.LittleEndian.PutUint64(b[:], uint64(r))
			for k := g.Indptr[r]; k < g.Indptr[r+1]; k++ {
				if _, err := w.Write(b[:]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if g.Values != nil {
		if err := write("edge_weight.npy", []int{m}, "<f4", func(w io.Writer) error {
			return binary.Write(w, binary.LittleEndian, g.Values)
		}); err != nil {
			return err
		}
	}
	if d.FeatDim > 0 {
		err := write("x.npy", []int{d.NumNodes, d.FeatDim}, "<f4", func(w io.Writer) error {
			if !graph.LittleEndianHost() {
				return binary.Write(w, binary.LittleEndian, d.Features)
			}
			// In 4 MiB pieces straight from the slice: binary.Write would
			// first copy all of it.
			b := graph.ByteView(d.Features)
			for len(b) > 0 {
				k := min(len(b), 4<<20)
				if _, err := w.Write(b[:k]); err != nil {
					return err
				}
				b = b[k:]
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if d.HasTargets() {
		if err := write("y.npy", []int{d.NumNodes, d.NumClasses}, "<f4", func(w io.Writer) error {
			return binary.Write(w, binary.LittleEndian, d.Targets)
		}); err != nil {
			return err
		}
	}
	if d.Labels != nil {
		err := write("y.npy", []int{d.NumNodes}, "<i8", func(w io.Writer) error {
			var b [8]byte
			for _, l := range d.Labels {
				binary.LittleEndian.PutUint64(b[:], uint64(int64(l)))
				if _, err := w.Write(b[:]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(d.Train)+len(d.Valid)+len(d.Test) > 0 {
		for _, s := range []struct {
			name string
			ids  []int32
		}{{"train_mask.npy", d.Train}, {"val_mask.npy", d.Valid}, {"test_mask.npy", d.Test}} {
			mask := make([]byte, d.NumNodes)
			for _, v := range s.ids {
				mask[v] = 1
			}
			err := write(s.name, []int{d.NumNodes}, "|b1", func(w io.Writer) error {
				_, err := w.Write(mask)
				return err
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// writeNPYFile writes one .npy file (format 1.0, C order) whose data body
// writes into a temporary file of path (safefile.Create, refusing any of
// inputs), through a writer that fails once ctx is done. The caller
// commits the returned file, or aborts it.
func writeNPYFile(ctx context.Context, path string, shape []int, descr string, body func(w io.Writer) error, inputs []string) (*safefile.File, error) {
	f, err := safefile.Create(path, inputs...)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(safefile.ContextWriter(ctx, f), 1<<20)
	if _, err := bw.Write(npyHeaderBytes(shape, descr)); err != nil {
		return f, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := body(bw); err != nil {
		return f, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return f, fmt.Errorf("writing %s: %w", path, err)
	}
	return f, nil
}

// npyHeaderBytes returns the magic, version 1.0 and the header dictionary,
// padded with spaces and a newline to a multiple of 64 bytes as numpy does.
func npyHeaderBytes(shape []int, descr string) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, tuple)
	hlen := len(dict) + 1
	hlen += (64 - (10+hlen)%64) % 64
	out := make([]byte, 0, 10+hlen)
	out = append(out, npyMagic...)
	out = append(out, 1, 0, byte(hlen), byte(hlen>>8))
	out = append(out, dict...)
	out = append(out, strings.Repeat(" ", hlen-len(dict)-1)...)
	return append(out, '\n')
}

// NPYHeader returns the header of a .npy file (format 1.0, C order) of
// the given shape and numpy dtype descr ("<i4", "<f4", ...); the data
// follows it.
func NPYHeader(shape []int, descr string) []byte { return npyHeaderBytes(shape, descr) }
