package chunkfeed

import (
	"fmt"
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/engine"
	"strata/core/tensor"
	"strata/plugins/strategy/internal/chunkplan"
	"strata/plugins/strategy/internal/hosttier"
)

// TestFeedAndSink runs two batches of one chunk each on one cpu device
// under every dedup mode, with rows moved by host indices and by Gather
// and ScatterAdd: each chunk's input rows must be its rows of the host
// matrix, and the sink, fed each chunk's input rows as their gradients,
// must leave every node's row times the number of chunks that read it
// in the host gradients (node 3, read by both batches, stays on the
// device in between with reuse).
func TestFeedAndSink(t *testing.T) {
	const n, w = 6, 2
	feats := make([]float32, n*w)
	for i := range feats {
		feats[i] = float32(i)
	}
	chunks := []*chunkplan.Chunk{{Id: 0, Src: []int32{2, 0, 3}}, {Id: 1, Src: []int32{3, 1, 5}}}
	reads := []float64{1, 1, 1, 2, 0, 1}
	be := cpu.New(cpu.Options{Threads: 1})
	for _, dedup := range []string{DedupNone, DedupP2P, DedupReuse} {
		for _, copier := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/copier=%v", dedup, copier), func(t *testing.T) {
				src, err := hosttier.FeatureRows(tensor.Float64, feats, n, w)
				if err != nil {
					t.Fatal(err)
				}
				grads, err := hosttier.FeatureRows(tensor.Float64, make([]float32, n*w), n, w)
				if err != nil {
					t.Fatal(err)
				}
				env := &Env{Be: be, DT: tensor.Float64, Bufs: be, Tiers: []tensor.Tier{tensor.Host}, Owner: make([]int32, n), Dedup: dedup}
				if copier {
					env.Bufs = backend.RecyclingFit(be)
					env.Rows = env.Bufs.(backend.RowCopier)
				}
				if dedup != DedupNone {
					// Batch 1 reads its buffer in order (the buffer is the
					// input), batch 0 in another order.
					env.Trans = &chunkplan.Transitions{Rows: [][][]int32{{{0, 2, 3}}, {{3, 1, 5}}}}
					if dedup == DedupReuse {
						env.Trans.Prev = [][][]int32{{{0, 0, 0}}, {{3, 0, 0}}}
					}
				}
				f := NewFeed(env, src, backend.PurposeFeatures)
				defer f.Release()
				var s *Sink
				if dedup != DedupNone {
					s = NewSink(env, grads)
					defer s.Release()
				}
				for j, c := range chunks {
					if err := f.Next(j); err != nil {
						t.Fatal(err)
					}
					if s != nil {
						if err := s.Open(j); err != nil {
							t.Fatal(err)
						}
					}
					x, owned, err := f.Input(0, c)
					if err != nil {
						t.Fatal(err)
					}
					got, err := engine.DownloadFloats(be, x)
					if err != nil {
						t.Fatal(err)
					}
					for k, u := range c.Src {
						for col := range w {
							if want := float64(feats[int(u)*w+col]); got[k*w+col] != want {
								t.Errorf("batch %d: input row %d (node %d) col %d = %v, want %v", j, k, u, col, got[k*w+col], want)
							}
						}
					}
					if s != nil {
						if err := s.Push(0, c, x); err != nil {
							t.Fatal(err)
						}
						if err := s.Close(j + 1); err != nil {
							t.Fatal(err)
						}
					}
					if owned {
						be.Release(x)
					}
				}
				if s == nil {
					return
				}
				all := []int32{0, 1, 2, 3, 4, 5}
				v, err := grads.Gather(all, nil)
				if err != nil {
					t.Fatal(err)
				}
				for u, g := range v.([]float64) {
					if want := float64(feats[u]) * reads[u/w]; g != want {
						t.Errorf("gradient of node %d col %d = %v, want %v", u/w, u%w, g, want)
					}
				}
			})
		}
	}
}
