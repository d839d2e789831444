package sampling_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"strata/core/graph/graphtest"
	"strata/core/sampling"
	"strata/core/sampling/samplertest"
)

// TestFullConformance runs the sampler suite on the full-neighbour draw.
func TestFullConformance(t *testing.T) {
	samplertest.Test(t, func() sampling.Sampler { return sampling.Full{Hops: 2} })
}

// TestFullSampleRows: the rows Full's SampleRows reads for a block's
// destinations are the block's rows (relabelled back to global ids), and
// a fanout is refused.
func TestFullSampleRows(t *testing.T) {
	g := graphtest.RMAT(8, 8, 3)
	f := sampling.Full{Hops: 2}
	blocks, err := f.Sample(context.Background(), g, []int32{3, 70, 1, 200}, 0)
	if err != nil {
		t.Fatal(err)
	}
	fanouts, replace := f.RowFanouts()
	if !slices.Equal(fanouts, []int{-1, -1}) || replace {
		t.Fatalf("RowFanouts = %v, %v", fanouts, replace)
	}
	for l, b := range blocks {
		indptr, nbr, err := f.SampleRows(g, b.Dst, b.Dst, l, fanouts[l], replace, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(indptr, b.Adj.Indptr) {
			t.Fatalf("block %d: row lengths differ", l)
		}
		for e, c := range b.Adj.Idx32 {
			if nbr[e] != b.Src[c] {
				t.Fatalf("block %d edge %d: %d, want %d", l, e, nbr[e], b.Src[c])
			}
		}
	}
	if _, _, err := f.SampleRows(g, []int32{1}, []int32{1}, 0, 5, false, 0); err == nil {
		t.Fatal("a fanout accepted")
	}
	if _, _, err := f.SampleRows(g, []int32{1}, nil, 0, -1, false, 0); err == nil {
		t.Fatal("rows and destinations of different lengths accepted")
	}
}

// TestCheckSeeds covers both ways CheckSeeds remembers the seeds (a
// bitset of the nodes when the seeds are many, a map when they are few
// on a large graph): the same verdicts and the same first duplicate.
func TestCheckSeeds(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int
		seeds []int32
		want  string // a substring of the error; "" for none
	}{
		{"all nodes", 130, iota32(130), ""},
		{"bitset duplicate", 130, []int32{5, 129, 64, 129, 5}, "seed 129 is listed twice"},
		{"bitset outside", 130, []int32{0, 130}, "outside [0,130)"},
		{"map distinct", 1 << 20, []int32{7, 1<<20 - 1, 64}, ""},
		{"map duplicate", 1 << 20, []int32{7, 64, 7}, "seed 7 is listed twice"},
		{"map negative", 1 << 20, []int32{7, -1}, "outside"},
	} {
		err := sampling.CheckSeeds("test", c.n, c.seeds)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// iota32 returns 0..n-1.
func iota32(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}
