package partreport

import (
	"context"
	"math"
	"strata/core/config"
	"strata/core/train"
	"strata/core/train/strategytest"
	_ "strata/partitioners"
	"strata/plugins/sampler"
	"strings"
	"testing"

	"strata/internal/floattol"
)

// TestPartitionProgress draws the stage bar of a METIS partition: load,
// the partitioner's stages, measure.
func TestPartitionProgress(t *testing.T) {
	var buf strings.Builder
	cfg := mustParse(t, coraBase, `partition.name="metis"`)
	if _, err := Partition(context.Background(), cfg, 4, false, &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"partition [", "0/4", "load", "4/4", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress %q lacks %q", out, want)
		}
	}
	buf.Reset()
	if _, err := Partition(context.Background(), cfg, 4, false, nil); err != nil || buf.Len() != 0 {
		t.Errorf("no progress writer: %v, %q", err, buf.String())
	}
}

// TestSplitRedundancy checks the walk down a batch's blocks against
// sampling each micro-batch's full neighbourhood afresh.
func TestSplitRedundancy(t *testing.T) {
	ctx := context.Background()
	cfg := mustParse(t, coraBase)
	ds, err := train.LoadDataset(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	adjs, err := train.BuildAdjacencies(ds, true)
	if err != nil {
		t.Fatal(err)
	}
	full := &sampler.Full{Hops: 2}
	whole, err := full.Sample(ctx, adjs.Adj, ds.Train, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 3, 7} {
		parts := make([]int32, len(ds.Train))
		for i := range parts {
			parts[i] = int32((i * 7919) % k)
		}
		got := splitRedundancy(whole, parts, k)
		sum := make([]int, 2)
		for p := 0; p < k; p++ {
			var grp []int32
			for i, q := range parts {
				if int(q) == p {
					grp = append(grp, ds.Train[i])
				}
			}
			bs, err := full.Sample(ctx, adjs.Adj, grp, 0)
			if err != nil {
				t.Fatal(err)
			}
			for l, b := range bs {
				sum[l] += len(b.Src)
			}
		}
		for l := range sum {
			want := float64(sum[l]) / float64(len(whole[l].Src))
			// Integer sums divided once on each side.
			if math.Abs(got[l]-want) > floattol.Gamma(2, floattol.UFloat64)*want {
				t.Errorf("k=%d layer %d: redundancy %v, resampled %v", k, l, got[l], want)
			}
		}
		if k == 1 && (got[0] != 1 || got[1] != 1) {
			t.Errorf("one micro-batch has redundancy %v, want 1", got)
		}
	}
}

const coraBase = strategytest.CoraBase

func mustParse(t *testing.T, text string, sets ...string) *config.Config {
	t.Helper()
	return strategytest.MustParse(t, text, sets...)
}
