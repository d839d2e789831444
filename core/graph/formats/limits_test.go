package formats

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// TestDeclaredSizes checks that sizes declared by a file are checked
// against the file's real size and the memory budget before allocating.
func TestDeclaredSizes(t *testing.T) {
	ogb := func(edit map[string]string) string {
		files := graphtest.TinyOGB()
		for k, v := range edit {
			files[k] = v
		}
		return graphtest.WriteOGB(t, files)
	}
	data, h := binFile(t)
	bigClasses := withHeader(t, data, h, func(h *binHeader) []byte { h.NumClasses = 1_000_000; return nil })
	manyScores := withHeader(t, data, h, func(h *binHeader) []byte { h.NumClasses = graph.MaxClasses; return nil })
	writeBin := func(b []byte) string {
		p := filepath.Join(t.TempDir(), "x.strata")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name   string
		spec   string
		budget int64
		kind   error
		want   []string
	}{
		{"ogb node count beyond the label file", ogb(map[string]string{"raw/num-node-list.csv": "2147483647\n"}), 1 << 40,
			graph.ErrCount, []string{"num-node-list.csv.gz:1: says 2147483647 nodes", "can hold at most"}},
		{"ogb node count beyond the budget", ogb(map[string]string{"raw/num-node-list.csv": "2147483647\n"}), 1 << 30,
			graph.ErrRange, []string{"2147483647 nodes would need 64.0 GiB, more than the memory budget of 1.0 GiB", "--max-memory"}},
		{"ogb features beyond the budget", ogb(nil), 100,
			graph.ErrRange, []string{"memory budget of 100 B"}},
		{"strata num_classes 1e6", writeBin(bigClasses), 1 << 40,
			graph.ErrFormat, []string{"inconsistent header", "classes 1000000"}},
		{"strata scores beyond the budget", writeBin(manyScores), 1 << 20,
			graph.ErrRange, []string{"65536 classes of scores would need", "memory budget of 1.0 MiB"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := graph.OpenContext(graph.WithMaxMemory(context.Background(), c.budget), c.spec)
			graphtest.WantErr(t, err, c.kind, c.want...)
		})
	}
}

// TestSpecialFiles checks that FIFOs and devices are refused at once
// instead of blocking or streaming without end.
func TestSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "g.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	zero := filepath.Join(dir, "zero.txt")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	ogbDir := graphtest.WriteOGB(t, graphtest.TinyOGB())
	os.Remove(filepath.Join(ogbDir, "raw/node-label.csv.gz"))
	if err := syscall.Mkfifo(filepath.Join(ogbDir, "raw/node-label.csv.gz"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, want string }{
		{fifo, "is a FIFO, not a regular file"},
		{zero, "is a character device, not a regular file"},
		{ogbDir, "node-label.csv.gz: is a FIFO"},
	} {
		done := make(chan error, 1)
		go func() { _, err := graph.Open(c.spec); done <- err }()
		select {
		case err := <-done:
			graphtest.WantErr(t, err, graph.ErrFormat, c.want)
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) blocks", c.spec)
		}
	}
	// The checksums of a run's provenance read through the same gate,
	// also when a FIFO takes a member's place after Sources listed it.
	goodDir := graphtest.WriteOGB(t, graphtest.TinyOGB())
	files, _, err := Sources(goodDir)
	if err != nil {
		t.Fatal(err)
	}
	swapped := filepath.Join(goodDir, "raw/node-label.csv.gz")
	os.Remove(swapped)
	if err := syscall.Mkfifo(swapped, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		done := make(chan error, 1)
		go func() { _, _, err := f.SHA256(); done <- err }()
		select {
		case err := <-done:
			if fifo := strings.HasSuffix(f.Name, "node-label.csv.gz"); fifo != (err != nil) || fifo && !strings.Contains(err.Error(), "is a FIFO") {
				t.Errorf("SHA256 of %s: %v", f.Name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("SHA256 of %s blocks", f.Name)
		}
	}
}

// TestLongLine checks the line-length limit of the text loaders.
func TestLongLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.txt")
	if err := os.WriteFile(p, []byte("0 1\n"+strings.Repeat("1", graph.MaxLineBytes+10)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := graph.Open(p)
	graphtest.WantErr(t, err, graph.ErrFormat, "g.txt:2: line is longer than 16 MiB")
}

// TestOpenContextCancel checks that a cancelled load returns at once,
// whatever the loader is doing: the loader here waits until the test
// releases it, so OpenContext returning while it still waits proves the
// load was abandoned on the cancel (no wall-clock bound: the test holds
// on a loaded machine).
func TestOpenContextCancel(t *testing.T) {
	b := graphtest.Blocking("open-context-cancel")
	defer b.Release()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-b.Started; cancel() }()
	res := make(chan error, 1)
	go func() { _, err := graph.OpenContext(ctx, b.Spec); res <- err }()
	var err error
	select {
	case err = <-res:
	case <-time.After(time.Minute): // a hang guard, not a speed bound
		t.Fatal("OpenContext still waits for the loader a minute after the cancel")
	}
	if err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	select {
	case <-b.Done:
		t.Fatal("OpenContext returned only after the loader finished")
	default:
	}
}
