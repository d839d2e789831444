package numpy

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// npyHeaderLen is the start of a .npy file of format version major whose
// header length field says hlen, followed by a short header and no data.
func npyHeaderLen(major byte, hlen uint32) []byte {
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.WriteByte(major)
	b.WriteByte(0)
	if major == 1 {
		binary.Write(&b, binary.LittleEndian, uint16(hlen))
	} else {
		binary.Write(&b, binary.LittleEndian, hlen)
	}
	b.WriteString("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 1), }\n")
	return b.Bytes()
}

// TestNPZHeaderBounded gives .npz members whose .npy header declares more
// bytes than the member holds (a 4 GiB header in a 600-byte archive):
// each is refused naming the array and the header field, without
// allocating what the header declares and without a runtime error in the
// message (npyio allocated the 4 GiB first, then panicked on a slice).
func TestNPZHeaderBounded(t *testing.T) {
	cases := []struct {
		name  string
		entry []byte
	}{
		{"4 GiB header, version 2", npyHeaderLen(2, 0xFFFFFFF0)},
		{"64 KiB header, version 1", npyHeaderLen(1, 60000)},
		{"1 GiB header, version 3", npyHeaderLen(3, 1<<30)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			arrays := tinyShchur()
			arrays["adj_indptr"] = c.entry
			path := writeNPZ(t, filepath.Join(t.TempDir(), "g.npz"), arrays)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := graph.Open(path)
			runtime.ReadMemStats(&after)
			graphtest.WantErr(t, err, graph.ErrTruncated, path, `array "adj_indptr": header field 'header_len'`)
			if err != nil && strings.Contains(err.Error(), "runtime error") {
				t.Errorf("error leaks a runtime error: %v", err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
				t.Errorf("allocated %d MiB for a %d-byte member", got>>20, len(c.entry))
			}
		})
	}
}

// zeros returns the .npy bytes of a zero array of v's type and shape.
func zeros[T int64 | float32](shape ...int) []byte {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return npyOf(make([]T, n), shape...)
}

// TestBudgetWholeLoad gives datasets whose arrays each fit the memory
// budget (--max-memory) but not together, or whose small compressed
// members expand past it (a zip bomb): each is refused with ErrRange
// naming the budget, and loads under a budget that holds it (before, the
// budget bounded each array alone, and not the dense features a sparse
// matrix declares at all).
func TestBudgetWholeLoad(t *testing.T) {
	shchur := tinyShchur()
	shchur["attr_shape"] = npyOf([]int64{4, 1 << 22}, 2) // 64 MiB dense from 3 values
	ogb := map[string][]byte{
		"num_nodes":  npyOf([]int64{1000}),
		"edge_index": zeros[int64](2, 250000), // 4 MB
		"node_feat":  zeros[float32](1000, 1000),
	}
	npyFiles := map[string][]byte{
		"labels.npy":     zeros[int64](1000),
		"edge_index.npy": zeros[int64](2, 250000),
		"features.npy":   zeros[float32](1000, 1000),
	}
	cases := []struct {
		name   string
		spec   func(t *testing.T) string
		budget int64 // refused at this budget, loaded at 8 times it
	}{
		{"sparse attributes declaring dense ones", func(t *testing.T) string {
			return writeNPZ(t, filepath.Join(t.TempDir(), "bomb.npz"), shchur)
		}, 16 << 20},
		{"npz members together", func(t *testing.T) string {
			return writeNPZ(t, filepath.Join(t.TempDir(), "data.npz"), ogb)
		}, 6 << 20},
		{"npy arrays together", func(t *testing.T) string { return npyDir(t, npyFiles) }, 6 << 20},
		{"npy arrays together, Fortran order", func(t *testing.T) string {
			return npyDir(t, map[string][]byte{
				"labels.npy":     npyFiles["labels.npy"],
				"edge_index.npy": npyFile(1, "<i8", true, []int{2, 250000}, make([]byte, 8*500000)),
				"features.npy":   npyFile(1, "<f4", true, []int{1000, 1000}, make([]byte, 4*1000000)),
			})
		}, 6 << 20},
		{"edges.csv beside npy arrays", func(t *testing.T) string {
			return npyDir(t, map[string][]byte{
				"y.npy": npyFiles["labels.npy"], "x.npy": npyFiles["features.npy"],
				"edges.csv": []byte(strings.Repeat("0,1\n", 250000)),
			})
		}, 6 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := c.spec(t)
			if st, err := os.Stat(spec); err == nil && !st.IsDir() && st.Size() > 1<<20 {
				t.Fatalf("the archive is %d bytes; the test wants a small one that expands", st.Size())
			}
			_, err := graph.OpenContext(graph.WithMaxMemory(context.Background(), c.budget), spec)
			graphtest.WantErr(t, err, graph.ErrRange, "more than the memory budget", "--max-memory")
			if _, err := graph.OpenContext(graph.WithMaxMemory(context.Background(), 8*c.budget), spec); err != nil {
				t.Fatalf("under 8 times the budget: %v", err)
			}
		})
	}
}

// TestNPYDirMembers covers the members of a .npy directory that used to be
// ignored instead of refused: a FIFO or device member (taken for absent,
// or blocking), an array present under both of its names (one was used
// silently), errors that named labels.npy when the file was y.npy, and
// edge_attr.npy, which no layer reads (once ignored), and edge weights
// (edge_weight.npy, read since) that are out of range.
func TestNPYDirMembers(t *testing.T) {
	fifo := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, name))
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	link := func(name, to string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, name))
			if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyTo := func(from, to string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, from))
			if err != nil {
				t.Fatal(err)
			}
			graphtest.WriteFile(t, dir, to, b)
		}
	}
	rename := func(from, to string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
				t.Fatal(err)
			}
		}
	}
	badEdges := npyOf([]int64{0, 1, 1, 9}, 2, 2)
	cases := []struct {
		name  string
		edits []func(t *testing.T, dir string)
		kind  error
		want  []string // "@" stands for the directory
	}{
		{"edge_index a FIFO", []func(*testing.T, string){fifo("edge_index.npy")}, graph.ErrFormat, []string{"@/edge_index.npy: is a FIFO"}},
		{"features a FIFO", []func(*testing.T, string){fifo("features.npy")}, graph.ErrFormat, []string{"@/features.npy: is a FIFO"}},
		{"labels a FIFO beside y.npy", []func(*testing.T, string){copyTo("labels.npy", "y.npy"), fifo("labels.npy")}, graph.ErrFormat, []string{"labels.npy and y.npy"}},
		{"train_idx a link to a device beside train_mask", []func(*testing.T, string){copyTo("train_idx.npy", "train_mask.npy"), link("train_idx.npy", "/dev/zero")}, graph.ErrFormat, []string{"train_idx.npy and train_mask.npy"}},
		{"test_idx a link to a device", []func(*testing.T, string){link("test_idx.npy", "/dev/zero")}, graph.ErrFormat, []string{"@/test_idx.npy: is a character device"}},
		{"labels under both names", []func(*testing.T, string){copyTo("labels.npy", "y.npy")}, graph.ErrFormat, []string{"@: holds both labels.npy and y.npy", "remove or rename"}},
		{"features under both names", []func(*testing.T, string){copyTo("features.npy", "x.npy")}, graph.ErrFormat, []string{"features.npy and x.npy"}},
		{"edge weights with a negative one", []func(*testing.T, string){copyTo("labels.npy", "edge_weight.npy")}, graph.ErrRange, []string{"@/edge_weight.npy: edge 4 has weight -1", "finite and >= 0"}},
		{"edge features, which no layer reads", []func(*testing.T, string){copyTo("features.npy", "edge_attr.npy")}, graph.ErrFormat, []string{"@/edge_attr.npy: per-edge features, which no layer reads yet"}},
		{"edge error names y.npy", []func(*testing.T, string){rename("labels.npy", "y.npy"), func(t *testing.T, dir string) { graphtest.WriteFile(t, dir, "edge_index.npy", badEdges) }},
			graph.ErrRange, []string{"(y.npy has 6 nodes)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := npyDir(t, tinyNPY())
			for _, e := range c.edits {
				e(t, dir)
			}
			done := make(chan error, 1)
			go func() { _, err := graph.Open(dir); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Open blocks")
			}
			want := make([]string, len(c.want))
			for i, f := range c.want {
				want[i] = strings.ReplaceAll(f, "@", dir)
			}
			graphtest.WantErr(t, err, c.kind, want...)
		})
	}
}
