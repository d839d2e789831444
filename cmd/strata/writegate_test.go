package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/safefile"
)

// TestWriteGate runs `strata train` with paths it must not write: a
// chunked.host_file that exists (the old code truncated, used and then
// deleted it, exiting 0) or that is the dataset (a bus error, the dataset
// truncated), and an output.csv whose lock path is a symbolic link to the
// dataset (the old code wrote its pid into the dataset). Each exits 2
// before training, names the key or file, and leaves the file as it was.
func TestWriteGate(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cora.strata")
	if code, _, stderr := cli(t, "convert", "-i", "embedded:cora", "-o", bin); code != 0 {
		t.Fatalf("convert: %s", stderr)
	}
	keep := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(keep, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.csv")
	if err := os.Symlink(bin, safefile.LockPath(out)); err != nil {
		t.Fatal(err)
	}
	train := func(extra ...string) []string {
		args := []string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "train.epochs=1", "--set", "data.dataset=" + bin,
			"--set", "output.progress=off", "--set", `train.mode="chunked"`, "--set", "chunked.chunks=4"}
		for _, e := range extra {
			args = append(args, "--set", e)
		}
		return append(args, wasmArgs()...)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"host file exists", train("chunked.host_file=" + keep), []string{"chunked.host_file", keep + " exists (a file)", "give a path that does not exist"}},
		{"host file is the dataset", train("chunked.host_file=" + bin), []string{"chunked.host_file", "the input " + bin + " of this run"}},
		{"host file is a device", train("chunked.host_file=/dev/null"), []string{"chunked.host_file", "exists (a character device)"}},
		{"lock is a symlink to the dataset", train("output.csv=" + out), []string{safefile.LockPath(out), "is a symbolic link"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := cli(t, c.args...)
			if code != exitUser || strings.Contains(stderr, "internal error") {
				t.Errorf("exit %d, stderr %q; want exit 2", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
		})
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "keep me\n" {
		t.Errorf("keep.txt: %q, %v", b, err)
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null: %v, %v", st, err)
	}
	if code, _, stderr := cli(t, "inspect", "-i", bin, "--verify"); code != 0 {
		t.Errorf("the dataset was damaged: %s", stderr)
	}
}
