package formats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// TestBitFlipsDetected flips random bits after the header of a binary
// graph file: every flip must be refused (checksums cover the sections,
// the gaps between them must be zero).
func TestBitFlipsDetected(t *testing.T) {
	data, _ := binFile(t)
	hlen := int(binary.LittleEndian.Uint32(data[12:]))
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	for i := range 150 {
		c := slices.Clone(data)
		pos := binPrelude + hlen + rng.IntN(len(data)-binPrelude-hlen)
		c[pos] ^= 1 << rng.IntN(8)
		p := graphtest.WriteFile(t, dir, "flip.strata", c)
		d, closer, err := OpenBinary(p)
		if err == nil {
			closer.Close()
			t.Fatalf("flip %d at byte %d accepted (%d nodes)", i, pos, d.NumNodes)
		}
		if !errors.Is(err, graph.ErrFormat) && !errors.Is(err, graph.ErrRange) {
			t.Errorf("flip %d: %v is neither ErrFormat nor ErrRange", i, err)
		}
	}
}

// TestBinaryFeaturesFinite checks that the binary loader refuses NaN
// features like the other loaders, and that VerifyBinary checks all.
func TestBinaryFeaturesFinite(t *testing.T) {
	d := graphtest.ReorderDataset(graph.FromEdges(4, graphtest.RandEdges(5, 4, 0, 6)))
	d.FeatDim, d.Features = 2, []float32{1, 2, 3, float32(math.NaN()), 5, 6, 7, 8}
	p := graphtest.WriteFile(t, t.TempDir(), "nan.strata", nil)
	if err := WriteBinary(p, d); err != nil {
		t.Fatal(err)
	}
	_, _, err := OpenBinary(p)
	graphtest.WantErr(t, err, graph.ErrRange, "feature [1, 1] is NaN, not a finite float32")
	graphtest.WantErr(t, VerifyBinary(p), graph.ErrRange, "not a finite float32")
}

// TestBinaryVersion1 checks that files of format version 1 (without
// section checksums) are still read.
func TestBinaryVersion1(t *testing.T) {
	data, _ := binFile(t)
	binary.LittleEndian.PutUint32(data[8:], 1)
	p := graphtest.WriteFile(t, t.TempDir(), "v1.strata", data)
	_, closer, err := OpenBinary(p)
	if err != nil {
		t.Fatalf("version 1 file refused: %v", err)
	}
	closer.Close()
	if err := VerifyBinary(p); err != nil {
		t.Fatalf("VerifyBinary: %v", err)
	}
}

// failAfter is a writer that fails with ENOSPC after n bytes: a full disk.
type failAfter struct {
	w io.Writer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, fmt.Errorf("write: %w", syscall.ENOSPC)
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// TestConvertDiskFull injects a full disk into the binary writer: the
// error says so, and neither the target nor a temporary file is left.
func TestConvertDiskFull(t *testing.T) {
	d := graphtest.ReorderDataset(graph.FromEdges(100, graphtest.RandEdges(5, 100, 0, 3000)))
	for _, after := range []int{0, 1000, 5000} {
		dir := t.TempDir()
		p := filepath.Join(dir, "g.strata")
		err := writeBinary(p, d, func(w io.Writer) io.Writer { return &failAfter{w, after} })
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("after %d bytes: err = %v, want ENOSPC", after, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("after %d bytes: left %v", after, ents)
		}
	}
}
