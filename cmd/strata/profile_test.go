package main

import (
	"os"
	"path/filepath"
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
