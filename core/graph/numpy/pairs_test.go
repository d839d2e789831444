package numpy

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"strata/core/graph"
)

// TestReadPairs reads pair files of each accepted form, and refuses a
// malformed one naming the file and the line, and a file whose pairs
// would not fit the memory budget before allocating them.
func TestReadPairs(t *testing.T) {
	dir := t.TempDir()
	put := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	npy := func(descr string, shape []int, vals ...int64) []byte {
		b := NPYHeader(shape, descr)
		for _, v := range vals {
			if descr == "<i4" {
				b = binary.LittleEndian.AppendUint32(b, uint32(v))
			} else {
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			}
		}
		return b
	}
	want := graph.Pairs{Src: []int32{0, 5, 2}, Dst: []int32{1, 7, 2}}
	cases := []struct {
		name, file string
		data       []byte
		budget     int64
		first      int    // FirstLine wanted
		err        string // "" = reads want
		kind       error
	}{
		{"csv", "a.csv", []byte("0,1\n5,7\n2,2"), 0, 1, "", nil},
		{"csv header crlf spaces", "b.CSV", []byte("src,dst\r\n0, 1\r\n 5 ,7\r\n2,2\r\n"), 0, 2, "", nil},
		{"npy int32", "a.npy", npy("<i4", []int{3, 2}, 0, 1, 5, 7, 2, 2), 0, 0, "", nil},
		{"npy int64", "b.npy", npy("<i8", []int{3, 2}, 0, 1, 5, 7, 2, 2), 0, 0, "", nil},
		{"csv three fields", "c.csv", []byte("0,1\n1,2,3\n"), 0, 0, "c.csv:2: ", graph.ErrFormat},
		{"csv header not first", "d.csv", []byte("0,1\nsrc,dst\n"), 0, 0, "d.csv:2: ", graph.ErrFormat},
		{"csv id past int32", "e.csv", []byte("0,2147483648\n"), 0, 0, "e.csv:1: ", graph.ErrFormat},
		{"csv over budget", "f.csv", []byte(strings.Repeat("0,1\n", 100)), 64, 0, "memory budget", graph.ErrRange},
		{"npy over budget", "g.npy", npy("<i8", []int{100, 2}, make([]int64, 200)...), 64, 0, "memory budget", graph.ErrRange},
		{"npy shape", "h.npy", npy("<i8", []int{2, 3}, 0, 1, 2, 3, 4, 5), 0, 0, "want (P, 2)", graph.ErrFormat},
		{"npy header larger than the file", "i.npy", npy("<i8", []int{1 << 40, 2}), 0, 0, "truncated", graph.ErrTruncated},
		{"npy id past int32", "j.npy", npy("<i8", []int{1, 2}, 0, 1<<31), 0, 0, "row 0", graph.ErrRange},
		{"extension", "k.tsv", []byte("0\t1\n"), 0, 0, "k.tsv", graph.ErrFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pf, err := ReadPairs(put(c.file, c.data), c.budget)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, c.kind) {
					t.Fatalf("error %v, want one containing %q (%v)", err, c.err, c.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pf.Pairs.Src, want.Src) || !slices.Equal(pf.Pairs.Dst, want.Dst) || pf.FirstLine != c.first {
				t.Fatalf("pairs %v, first line %d; want %v, %d", pf.Pairs, pf.FirstLine, want, c.first)
			}
			// The second pair is the first out of range of a 2-node
			// graph: its line (.csv) or row (.npy) is named.
			err = pf.CheckNodes(2, "g")
			at := pf.Path + ": row 1: source node id 5"
			if c.first > 0 {
				at = pf.Path + ":" + strconv.Itoa(c.first+1) + ": column 1: source node id 5"
			}
			if err == nil || !strings.Contains(err.Error(), at) || !errors.Is(err, graph.ErrRange) {
				t.Errorf("CheckNodes(2): %v, want an error naming %q", err, at)
			}
			if err := pf.CheckNodes(8, "g"); err != nil {
				t.Errorf("CheckNodes(8): %v", err)
			}
		})
	}
}
