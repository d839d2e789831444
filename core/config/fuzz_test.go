package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParse checks that no config text panics the parser or the key-line
// scanner; errors are expected.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../configs/*.toml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "[data]\ndataset = \"embedded:cora\"\n", "x = {a = {b = [1, {c = 2}]}}",
		"a.b.\"c\".'d' = '''\n'''", "x = \"\"\"", "[[a]]\n[[a]]\nb = 1", "x = [{", "'", "x = '",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Validation is linear in the size of the file: a slow input is a
		// failure the fuzzer keeps, not a hang it times out on.
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = Parse("fuzz.toml", data)
			scanKeyLines(string(data))
		}()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			t.Fatalf("parsing %d bytes takes more than 3 s: %q", len(data), data)
		}
	})
}

// FuzzOverride checks that no --set argument panics the parser.
func FuzzOverride(f *testing.F) {
	for _, s := range []string{
		"train.epochs=5", "model.options.heads=4", "data.dataset=embedded:cora", "a.b=[1,{c=2}]",
		"=", "a..b=1", "\"a.b\"=x", "train=1", "train.epochs.x=1",
	} {
		f.Add(s)
	}
	base := []byte("[data]\ndataset = \"embedded:cora\"\n")
	f.Fuzz(func(t *testing.T, o string) {
		_, _ = Parse("fuzz.toml", base, o)
	})
}
