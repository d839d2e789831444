package cuda

import (
	"math"
	"strings"
	"testing"
)

// TestRooflineOf checks the roofline of known GPUs, from the attributes
// their drivers report, against their datasheets' peaks (which round to
// three digits: 0.5 % apart at most).
func TestRooflineOf(t *testing.T) {
	cases := []struct {
		gpu          string
		a            deviceAttrs
		gflops, gbps float64
	}{
		{"V100 SXM2", deviceAttrs{7, 0, 80, 1530000, 877000, 4096}, 15700, 900},
		{"A100 SXM4 40GB", deviceAttrs{8, 0, 108, 1410000, 1215000, 5120}, 19500, 1555},
		{"H100 SXM5", deviceAttrs{9, 0, 132, 1980000, 2619000, 5120}, 66900, 3350},
		{"RTX 6000 (Betty's)", deviceAttrs{7, 5, 72, 1770000, 7000000, 384}, 16300, 672},
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 0.005*want }
	for _, c := range cases {
		s, err := rooflineOf(c.a)
		if err != nil {
			t.Fatalf("%s: %v", c.gpu, err)
		}
		if !near(s.PeakGFLOPS, c.gflops) || !near(s.MemGBps, c.gbps) || s.LaunchUS != launchUS {
			t.Errorf("%s: %.0f GFLOP/s, %.0f GB/s, %g µs; want %.0f, %.0f", c.gpu, s.PeakGFLOPS, s.MemGBps, s.LaunchUS, c.gflops, c.gbps)
		}
	}
	for _, bad := range []struct {
		a    deviceAttrs
		want string
	}{
		{deviceAttrs{5, 2, 24, 1000000, 3500000, 384}, "compute capability 5.2"},
		{deviceAttrs{9, 0, 132, 0, 2619000, 5120}, "a 0 kHz clock"},
	} {
		if _, err := rooflineOf(bad.a); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want an error with %q", bad.a, err, bad.want)
		}
	}
}
