package hosttier

import (
	"fmt"
	"strata/core/tensor"
	"testing"
)

// TestHostRows checks the host tier's row gathers, writes, additions
// and clearing, in RAM (split over goroutines for many rows) and in a
// host file (sorted into runs: scattered rows, runs longer than one
// read, rows a page apart; additions deferred through the log, in small
// buckets and segments, and dropped by a clear), against plain loops
// over a reference.
func TestHostRows(t *testing.T) {
	type matrix struct {
		name string
		new  func(n, cols int) (Rows, error)
	}
	dir := t.TempDir()
	files := 0 // a host file is a new file: one path per matrix
	matrices := []matrix{
		{"ram", func(n, cols int) (Rows, error) { return newHostRows(tensor.Float64, n, cols, nil) }},
		{"file", func(n, cols int) (Rows, error) {
			size := Bytes(tensor.Float64, n, []int{1, cols})
			files++
			f, closeFile, err := OpenFile(fmt.Sprintf("%s/host%d.bin", dir, files), size)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { closeFile() })
			log, err := NewAddLog(dir)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { log.Close() })
			// Several buckets and segments, and a log bound that applies
			// the additions early many times in a pass.
			log.bucketBytes, log.segBytes, log.limitBytes = 5000, 700, 3000
			a := &Arena{DT: tensor.Float64, File: f, Log: log, Size: size}
			if _, err := a.Matrix(n, 1); err != nil { // the matrix under test starts at a later offset
				return nil, err
			}
			return a.Matrix(n, cols)
		}},
	}
	for _, m := range matrices {
		for _, n := range []int{3, 50000} {
			for _, cols := range []int{3, 128} {
				h, err := m.new(n, cols)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]float64, n*cols)
				// A permutation of every row, then every third row (gaps), then
				// the rows of a contiguous range.
				sets := [][]int32{make([]int32, n), nil, nil}
				for i := range sets[0] {
					sets[0][i] = int32((i*7919 + 11) % n) // n is not a multiple of 7919
				}
				for i := 0; i < n; i += 3 {
					sets[1] = append(sets[1], int32(i))
				}
				for i := n / 3; i < 2*n/3+1; i++ {
					sets[2] = append(sets[2], int32(i))
				}
				for si, ids := range sets {
					vals := make([]float64, len(ids)*cols)
					for i := range vals {
						vals[i] = float64(si*1000 + i)
					}
					if err := h.Put(ids, vals); err != nil {
						t.Fatal(err)
					}
					if err := h.Add(ids, vals); err != nil {
						t.Fatal(err)
					}
					for i, u := range ids {
						for j := range cols {
							want[int(u)*cols+j] = 2 * vals[i*cols+j]
						}
					}
					all := sets[0]
					got, err := h.Gather(all)
					if err != nil {
						t.Fatal(err)
					}
					for i, u := range all {
						for j := range cols {
							if g := got.([]float64)[i*cols+j]; g != want[int(u)*cols+j] {
								t.Fatalf("%s n=%d cols=%d set %d: row %d column %d is %v, want %v", m.name, n, cols, si, u, j, g, want[int(u)*cols+j])
							}
						}
					}
				}
				ones := make([]float64, len(sets[1])*cols)
				for i := range ones {
					ones[i] = 1
				}
				if err := h.Add(sets[1], ones); err != nil { // pending, then dropped
					t.Fatal(err)
				}
				if err := h.Zero(); err != nil {
					t.Fatal(err)
				}
				got, err := h.Gather(sets[1])
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range got.([]float64) {
					if v != 0 {
						t.Fatalf("%s n=%d: element %d is %v after zero", m.name, n, i, v)
					}
				}
			}
		}
	}
}
