//go:build cuda

package cuda

import (
	"testing"

	"strata/core/store"
	"strata/core/tensor"
)

// The feature store gathers a batch whose hot rows sit in device memory
// and whose cold rows are read from pinned host memory in place: the
// rows come back exactly, and the host rows' bytes count on the
// host→device link.
func TestStoreZeroCopyGather(t *testing.T) {
	b := open(t, Options{})
	const n, dim = 400, 12
	feats := make([]float32, n*dim)
	for i := range feats {
		feats[i] = float32(i%977) - 300.5
	}
	rank := make([]int32, n) // the first 100 ranked nodes are cached
	for i := range rank {
		rank[i] = int32((i * 7) % n)
	}
	s, err := store.New(b, feats, dim, rank, store.Options{Devices: []tensor.Tier{DeviceTier}, Capacity: []int64{100 * dim * 4}})
	must(t, err)
	defer s.Close()
	for _, tc := range []struct {
		name string
		ids  []int32
		host int
	}{
		{"mixed", []int32{0, 1, 7, 399, 14, 3, 0}, 2}, // 399 = 7·57 is cached
		{"cold only", []int32{1, 2, 3}, 3},
		{"hot only", []int32{0, 7, 14}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.Stats().Peak[tensor.Host]
			out, st, err := s.Gather(t.Context(), tc.ids, DeviceTier)
			must(t, err)
			defer b.Release(out)
			got := make([]float32, len(tc.ids)*dim)
			must(t, b.Download(out, got))
			for i, id := range tc.ids {
				for j := range dim {
					if w := feats[int(id)*dim+j]; got[i*dim+j] != w {
						t.Fatalf("row %d (node %d) column %d = %v, want %v", i, id, j, got[i*dim+j], w)
					}
				}
			}
			if st.Host != tc.host {
				t.Errorf("%d rows from the host, want %d", st.Host, tc.host)
			}
			if bytes := st.FeatureBytes[store.Link{From: tensor.Host, To: DeviceTier}]; bytes != int64(tc.host*dim*4) {
				t.Errorf("%d bytes host→device, want %d", bytes, tc.host*dim*4)
			}
			if after := b.Stats().Peak[tensor.Host]; after != before {
				t.Errorf("host peak grew by %d bytes: the cold rows were staged on the host", after-before)
			}
		})
	}
}
