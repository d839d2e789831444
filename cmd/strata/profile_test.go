package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/google/pprof/profile"
)

// TestProfiles checks that --cpuprofile and --memprofile write profiles
// that parse, with samples, and that --memory-limit is accepted.
func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, heap := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "heap.prof")
	args := append([]string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "train.epochs=2",
		"--set", "output.progress=off", "--cpuprofile", cpu, "--memprofile", heap, "--memory-limit", "4G"}, wasmArgs()...)
	if code, _, stderr := cli(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, p := range []struct {
		path, sample string
	}{{cpu, "cpu"}, {heap, "alloc_space"}} {
		f, err := os.Open(p.path)
		if err != nil {
			t.Fatal(err)
		}
		prof, err := profile.Parse(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p.path, err)
		}
		found := false
		for _, st := range prof.SampleType {
			found = found || st.Type == p.sample
		}
		if !found {
			t.Errorf("%s: no %q samples in %v", p.path, p.sample, prof.SampleType)
		}
	}
}

// TestGCPercentFor checks the governor's growth target: Go's 100 while
// the garbage floor exceeds the live heap, then the floor over the live
// heap, then 10 once a tenth of the live heap exceeds the floor.
func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{64 << 20, 100},
		{gcGarbageFloor, 100},
		{2 * gcGarbageFloor, 50},
		{4 * gcGarbageFloor, 25},
		{10 * gcGarbageFloor, 10},
		{100 * gcGarbageFloor, 10},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("live %d MiB: GOGC %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// TestGovernGCRestores checks that stopping the governor puts back the
// collector's setting it found.
func TestGovernGCRestores(t *testing.T) {
	old := debug.SetGCPercent(77)
	defer debug.SetGCPercent(old)
	stop := governGC()
	stop()
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("GOGC after the governor: %d, want 77", got)
	}
}
