package store_test

import (
	"context"
	"math"
	"strata/core/topology"
	"testing"

	"strata/core/backend/sim"
	"strata/core/store"
	"strata/core/tensor"
	"strata/plugins/placement"
)

// TestPlannedGather places hot rows by XGNN placement plans on the
// topologies of XGNN Fig. 13 and checks that every device's gather is
// exact and reads each row from where the plan says.
func TestPlannedGather(t *testing.T) {
	d := dataset(t)
	n, dim := d.NumNodes, d.FeatDim
	rank := fullRank(t, "cache.degree", d)
	cases := []struct {
		preset  string
		devices []int
	}{
		{"dgx1-v100-8", nil},
		{"dgx1-v100-8", []int{0, 1, 6, 7}},
		{"dgx1-v100-8", []int{0, 1, 2, 3, 4, 5}},
		{"nvlink-ring-4", nil},
	}
	for _, c := range cases {
		full, err := topology.Preset(c.preset, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		solver := &placement.XGNN{LocalGBps: placement.DefaultLocalGBps, MaxSteps: placement.DefaultMaxSteps}
		plan, err := solver.Place(context.Background(), full, c.devices)
		if err != nil {
			t.Fatal(err)
		}
		sp := plan.StorePlan()
		D := len(plan.Devices)
		b, err := sim.New(full, 2)
		if err != nil {
			t.Fatal(err)
		}
		devs := make([]tensor.Tier, D)
		for i, g := range plan.Devices {
			devs[i] = sim.DeviceTier(g)
		}
		perPart := n / (4 * D)
		capBytes := int64(perPart*plan.MaxStored()) * int64(dim) * 4
		s, err := store.New(b, d.Features, dim, rank, store.Options{Placement: store.Planned, Devices: devs, Capacity: []int64{capBytes}, Plan: sp})
		if err != nil {
			t.Fatalf("%s %v: %v", c.preset, c.devices, err)
		}
		hot := perPart * D // every device holds MaxStored partitions of perPart rows at most
		part := make(map[int32]int, hot)
		for r, v := range rank[:hot] {
			part[v] = r % D
		}
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(i)
		}
		for di, dst := range devs {
			out, st, err := s.Gather(context.Background(), ids, dst)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, out.Numel())
			if err := b.Download(out, got); err != nil {
				t.Fatal(err)
			}
			b.Release(out)
			want := store.HostGather(d.Features, dim, ids)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %v -> %s: element %d differs", c.preset, c.devices, dst, i)
				}
			}
			// Independent count of the rows each source tier serves.
			wantTier := map[tensor.Tier]int{}
			for _, v := range ids {
				q, isHot := part[v]
				src := -1
				if isHot {
					src = sp.Reads[di][q]
				}
				if src < 0 {
					wantTier[tensor.Host]++
				} else {
					wantTier[devs[src]]++
				}
			}
			for tier, rows := range wantTier {
				if st.Tier[tier] != rows {
					t.Errorf("%s %v -> %s: %s served %d rows, want %d", c.preset, c.devices, dst, tier, st.Tier[tier], rows)
				}
			}
			if st.Local != wantTier[dst] {
				t.Errorf("%s %v -> %s: %d local hits, want %d", c.preset, c.devices, dst, st.Local, wantTier[dst])
			}
		}
		s.Close()
	}
}
