package store

import (
	"context"
	"fmt"
	"strata/core/topology"

	"strata/core/backend/sim"
	"strata/core/tensor"
)

// EpochTraffic is what one epoch's gathers moved through a store whose one
// simulated device caches the rows of a ranking.
type EpochTraffic struct {
	FeatureBytes int64 // host-to-device feature bytes
	IndexBytes   int64 // host-to-device index bytes
	Local, Rows  int64 // rows the device served, of all rows read
}

// MeasureEpoch gathers every batch of input ids (float32 features of dim
// columns) through a store on one simulated pcie-only device that caches
// the rows of rank, and returns the bytes that crossed the host link. It
// checks the store's counts against the backend's link counter and
// against rows × row bytes, so a miscount is an error, not a figure.
func MeasureEpoch(ctx context.Context, features []float32, dim int, rank []int32, batches [][]int32) (EpochTraffic, error) {
	var t EpochTraffic
	topo, err := topology.Preset("pcie-only", 1, 0)
	if err != nil {
		return t, err
	}
	b, err := sim.New(topo, 0)
	if err != nil {
		return t, err
	}
	dev := sim.DeviceTier(0)
	rowBytes := int64(dim) * 4
	s, err := New(b, features, dim, rank, Options{Placement: Interleaved, Devices: []tensor.Tier{dev}, Capacity: []int64{int64(len(rank)) * rowBytes}})
	if err != nil {
		return t, err
	}
	defer s.Close()
	b.ResetTraffic()
	link := Link{From: tensor.Host, To: dev}
	for _, ids := range batches {
		out, st, err := s.Gather(ctx, ids, dev)
		if err != nil {
			return t, err
		}
		b.Release(out)
		if want := int64(st.Host) * rowBytes; st.FeatureBytes[link] != want {
			return t, fmt.Errorf("store: counted %d feature bytes for %d host rows of %d bytes", st.FeatureBytes[link], st.Host, rowBytes)
		}
		t.FeatureBytes += st.FeatureBytes[link]
		t.IndexBytes += st.IndexBytes[link]
		t.Local += int64(st.Local)
		t.Rows += int64(st.Rows)
	}
	var counted int64
	for _, l := range b.Traffic() {
		if l.Link == link.String() {
			counted = l.Bytes
		}
	}
	if counted != t.FeatureBytes+t.IndexBytes {
		return t, fmt.Errorf("store: the simulated backend counted %d host-to-device bytes, the store %d feature + %d index bytes", counted, t.FeatureBytes, t.IndexBytes)
	}
	return t, nil
}
