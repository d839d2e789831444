//go:build !cuda

package strategytests

import (
	"strata/core/config"
	"strata/plugins/strategy/internal/testkit"
	"strings"
	"testing"
)

// A build without the cuda tag rejects train.backend = "cuda" with the
// key's location and the fix.
func TestCUDABackendNeedsTag(t *testing.T) {
	_, err := config.Parse("test.toml", []byte(testkit.CoraBase), "train.backend=cuda")
	if err == nil {
		t.Fatal("train.backend = cuda trained without CUDA support")
	}
	for _, want := range []string{"train.backend", "-tags cuda", "docs/cuda.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
