package numpy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"strata/core/graph"
	"strata/core/safefile"
)

// WriteNPYDir exports d as a directory of .npy files in the names PyG and
// DGL users expect: edge_index.npy (int64, shape (2, E): row 0 the source,
// row 1 the target of each stored edge), x.npy (float32, (N, D); absent
// without features), y.npy (int64, (N,); -1 = unlabeled; absent without
// labels), and train_mask.npy, val_mask.npy, test_mask.npy (bool, (N,))
// when the dataset has a split. LoadNPYDir reads the directory back. dir is
// created if needed; each file is written under a temporary name and
// renamed. It returns the paths written.
func WriteNPYDir(dir string, d *graph.Dataset) ([]string, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: not writing an invalid dataset: %w", dir, err)
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s exists and is not a directory; --to npy writes a directory of .npy files: %w", dir, graph.ErrFormat)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	var written []string
	write := func(name string, shape []int, descr string, body func(w io.Writer) error) error {
		path := filepath.Join(dir, name)
		if err := writeNPYFile(path, shape, descr, body); err != nil {
			return err
		}
		written = append(written, path)
		return nil
	}
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
		return written, err
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
			return written, err
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
			return written, err
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
				return written, err
			}
		}
	}
	return written, nil
}

// writeNPYFile writes one .npy file (format 1.0, C order) whose data body
// writes, atomically through core/safefile.
func writeNPYFile(path string, shape []int, descr string, body func(w io.Writer) error) error {
	err := safefile.Write(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if _, err := bw.Write(npyHeaderBytes(shape, descr)); err != nil {
			return err
		}
		if err := body(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
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
