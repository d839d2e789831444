//go:build cuda

package cuda

import (
	"math"
	"testing"
)

// TestDeviceDescription checks what the backend tells the cost models
// about its GPU: under the mock (an H100 SXM5's attributes) its datasheet
// roofline, and on a GPU one that rooflineOf accepts; the host link is
// measured, positive and finite, and measured once.
func TestDeviceDescription(t *testing.T) {
	b := open(t, Options{})
	s, err := b.DeviceRoofline()
	if err != nil {
		t.Fatal(err)
	}
	if b.DeviceName() == "strata CPU mock" {
		if math.Abs(s.PeakGFLOPS-66908) > 1 || math.Abs(s.MemGBps-3352.32) > 0.01 {
			t.Errorf("mock H100: %+v, want 66908 GFLOP/s and 3352.32 GB/s", s)
		}
	}
	t.Logf("%s: %.0f GFLOP/s float32, %.0f GB/s, %g µs a launch", b.DeviceName(), s.PeakGFLOPS, s.MemGBps, s.LaunchUS)
	gbps, err := b.HostLinkGBps()
	if err != nil || !(gbps > 0) || math.IsInf(gbps, 0) {
		t.Fatalf("host link: %g GB/s, %v", gbps, err)
	}
	if again, _ := b.HostLinkGBps(); again != gbps {
		t.Errorf("host link measured twice: %g then %g GB/s", gbps, again)
	}
	t.Logf("host link: %.1f GB/s", gbps)
}
