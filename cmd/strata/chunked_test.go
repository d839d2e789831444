package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestChunkedBadInput runs train.mode = "chunked" with bad settings
// through the command line: each exits 2 with a message naming the key
// and the fix, without a stack trace.
func TestChunkedBadInput(t *testing.T) {
	train := func(t testing.TB, sets ...string) []string {
		args := append([]string{"train", "-c", conf(t, cora), "--set", `train.mode="chunked"`, "--set", "train.epochs=1"}, wasmArgs()...)
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		return args
	}
	cases := []struct {
		name string
		args func(t testing.TB) []string
		want []string
	}{
		{"more-chunks-than-nodes", func(t testing.TB) []string { return train(t, "chunked.chunks=5000") },
			[]string{"chunked.chunks = 5000 is more than the 2708 nodes"}},
		{"not-multiple-of-devices", func(t testing.TB) []string {
			return train(t, `train.backend="sim"`, "devices.count=2", "chunked.chunks=5")
		}, []string{"chunked.chunks = 5 is not a multiple of the 2 devices", "use 4 or 6"}},
		{"fewer-chunks-than-devices", func(t testing.TB) []string {
			return train(t, `train.backend="sim"`, `devices.preset="nvlink-clique-4"`, "chunked.chunks=2")
		}, []string{"chunked.chunks = 2 is not a multiple of the 4 devices", "use 4"}},
		{"device-too-small", func(t testing.TB) []string {
			return train(t, `train.backend="sim"`, "devices.memory_bytes=100000", "chunked.chunks=4")
		}, []string{"devices.memory_bytes = 100000", "the smallest feasible capacity is devices.memory_bytes ="}},
		{"chunks-too-few", func(t testing.TB) []string {
			return train(t, `train.backend="sim"`, "devices.memory_bytes=4000000", "chunked.chunks=1")
		}, []string{"chunked.chunks = 1 does not fit devices.memory_bytes = 4000000", "fits", `chunked.chunks = "auto"`}},
		{"auto-without-capacity", func(t testing.TB) []string { return train(t, `train.backend="sim"`, `chunked.chunks="auto"`) },
			[]string{`chunked.chunks = "auto" sizes the chunks to devices.memory_bytes, which is 0`}},
		{"host-file-unwritable", func(t testing.TB) []string {
			return train(t, "chunked.chunks=2", "chunked.host_file="+filepath.Join(t.TempDir(), "missing", "dir", "host.bin"))
		}, []string{"chunked.host_file =", "cannot create", "does not exist: create it first"}},
		{"host-file-on-sim", func(t testing.TB) []string {
			return train(t, `train.backend="sim"`, "chunked.chunks=2", "chunked.host_file=host.bin")
		}, []string{"chunked.host_file maps the host tier to a file on the cpu backend"}},
		{"prefetch-on-sim", func(t testing.TB) []string {
			return train(t, `train.backend="sim"`, "chunked.chunks=2", "chunked.prefetch=true")
		}, []string{"chunked.prefetch reads the next batch's rows on the host", `set train.backend = "cpu"`}},
		{"section-without-mode", func(t testing.TB) []string {
			return append([]string{"train", "-c", conf(t, cora), "--set", "chunked.chunks=2"}, wasmArgs()...)
		}, []string{"chunked: the section configures train.mode = \"chunked\""}},
		{"host-tier-over-budget", func(t testing.TB) []string {
			return append(train(t, "chunked.chunks=2", "model.hidden=64", "train.dtype=float64"), "--max-memory", "2M")
		}, []string{"the host tier's activations and gradients need 2.9 MiB, more than the memory budget", "chunked.host_file"}},
		{"intermediates", func(t testing.TB) []string { return train(t, `chunked.intermediates="both"`) },
			[]string{"chunked.intermediates", "cache"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := cli(t, c.args(t)...)
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
			if code != exitUser {
				t.Errorf("exit code %d, want %d", code, exitUser)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q", w)
				}
			}
			for _, bad := range []string{"goroutine ", "internal error", ".go:"} {
				if strings.Contains(stderr, bad) {
					t.Errorf("stderr contains %q", bad)
				}
			}
		})
	}
}
