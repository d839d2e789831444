package opgen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestFresh fails when a generated file differs from what the op table
// gives: run `go generate ./core/ir`.
func TestFresh(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", f.Path))
		if err != nil {
			t.Fatalf("%s: %v (run go generate ./core/ir)", f.Path, err)
		}
		if !bytes.Equal(got, f.Data) {
			t.Errorf("%s is stale: run go generate ./core/ir", f.Path)
		}
	}
}
