//go:build !cuda

package strategy

import (
	"context"
	"strata/core/train"
	"strings"
	"testing"
)

// A build without the cuda tag rejects train.backend = "cuda" with the
// key's location and the fix.
func TestCUDABackendNeedsTag(t *testing.T) {
	cfg := mustParse(t, coraBase, "train.backend=cuda")
	_, err := train.Run(context.Background(), cfg, train.Options{Host: testHost(t)})
	if err == nil {
		t.Fatal("train.backend = cuda trained without CUDA support")
	}
	for _, want := range []string{"train.backend", "-tags cuda", "docs/cuda.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
