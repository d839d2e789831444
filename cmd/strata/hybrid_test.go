package main

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestHybridBadInput: train.mode = "hybrid" with settings that cannot
// work exits 2 with an error naming the key.
func TestHybridBadInput(t *testing.T) {
	base := []string{"train", "-c", "../../configs/gcn-cora.toml", "--set", `train.mode="hybrid"`, "--set", `sampler.name="uniform"`,
		"--set", "sampler.fanouts=[5,5]", "--set", `output.progress="off"`, "--set", "train.epochs=1"}
	for _, tc := range []struct {
		name string
		sets []string
		want string
	}{
		{"no devices", nil, `train.backend = "cpu" has no devices`},
		{"zero CPU trainers with DRM", []string{`train.backend="sim"`, "hybrid.cpu_trainers=0", "hybrid.cpu_share=0", `hybrid.drm="measured"`}, "hybrid.cpu_trainers = 0 with hybrid.drm"},
		{"threads above the cores", []string{`train.backend="sim"`, fmt.Sprintf("hybrid.threads=%d", runtime.NumCPU()+1)}, "hybrid.threads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string(nil), base...)
			for _, s := range tc.sets {
				args = append(args, "--set", s)
			}
			if code, _, stderr := cli(t, args...); code != exitUser || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q lacks %q", code, stderr, tc.want)
			}
		})
	}
}
