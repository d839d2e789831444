package train

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/safefile"
)

// TestRescueEndsABlockedRun ends a run whose loop is blocked (as in a
// collective that waits on a dead rank) from another goroutine: the
// finished epochs' rows are committed to output.csv and output.log, the
// result so far comes back with the status asked for, and the run, once
// unblocked, writes nothing more and returns ErrRescued.
func TestRescueEndsABlockedRun(t *testing.T) {
	cfg := testConfig(t, "epochs = 6")
	l := testLoop(t, cfg, &fakeStepper{valid: []int{1, 2, 2, 3, 3, 3}, cancelAt: -1})
	blocked, release := make(chan struct{}), make(chan struct{})
	l.beforeEval = func(ep int) {
		if ep == 2 { // epochs 0 and 1 are written
			close(blocked)
			<-release
		}
	}
	r := &Rescue{}
	r.begin(func(status string) *Result {
		t.Error("early result asked for after the loop started")
		return &Result{}
	})
	done := make(chan error)
	go func() { done <- l.run(context.Background(), Options{Rescue: r}) }()
	<-blocked
	res, ok := r.End(StatusFailed, errors.New("rank 1 died"))
	if !ok || res.Status != StatusFailed || res.BestEpoch != 1 {
		t.Fatalf("End = %+v, %v; want status failed, best epoch 1", res, ok)
	}
	if _, again := r.End(StatusFailed, nil); again {
		t.Error("a second End ended the run again")
	}
	assertCommitted(t, cfg.CSVPath(), cfg.LogPath(), 2)
	for _, p := range []string{cfg.CSVPath(), cfg.LogPath()} {
		if _, err := os.Stat(safefile.LockPath(p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the lock of %s is still there after the rescue (%v)", p, err)
		}
	}
	close(release)
	if err := <-done; !errors.Is(err, ErrRescued) {
		t.Errorf("the rescued run returned %v, want ErrRescued", err)
	}
	assertCommitted(t, cfg.CSVPath(), cfg.LogPath(), 2) // nothing written after the rescue
}

// TestRescueOutsideTheLoop: before the run checked its config End has
// nothing to end; before the first epoch it gives the early result line;
// after the run ended by itself its own result stands.
func TestRescueOutsideTheLoop(t *testing.T) {
	var none *Rescue
	if _, ok := none.End(StatusFailed, nil); ok {
		t.Error("a nil rescue ended something")
	}
	r := &Rescue{}
	if _, ok := r.End(StatusFailed, nil); ok {
		t.Error("End before the run began ended something")
	}
	r.begin(func(status string) *Result { return &Result{Status: status, BestEpoch: -1} })
	if res, ok := r.End(StatusInterrupted, nil); !ok || res.Status != StatusInterrupted || res.BestEpoch != -1 {
		t.Errorf("End before the first epoch = %+v, %v; want the early result, interrupted", res, ok)
	}

	cfg := testConfig(t, "epochs = 2")
	l := testLoop(t, cfg, &fakeStepper{valid: []int{1, 2}, cancelAt: -1})
	r = &Rescue{}
	r.begin(func(string) *Result { return &Result{} })
	if err := l.run(context.Background(), Options{Rescue: r}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.End(StatusFailed, nil); ok {
		t.Error("End after the run finished ended it again")
	}
	assertCommitted(t, cfg.CSVPath(), cfg.LogPath(), 2)
}

// assertCommitted checks that output.csv holds a header and rows epochs,
// output.log rows lines, and that no temp file is left beside them.
func assertCommitted(t *testing.T, csvPath, logPath string, rows int) {
	t.Helper()
	if got := csvRowsOf(t, csvPath); len(got) != 1+rows {
		t.Errorf("output.csv has %d rows, want a header and %d epochs", len(got), rows)
	}
	b, err := os.ReadFile(logPath)
	if err != nil || bytes.Count(b, []byte("\n")) != rows {
		t.Errorf("output.log: %d lines (%v), want %d", bytes.Count(b, []byte("\n")), err, rows)
	}
	entries, err := os.ReadDir(filepath.Dir(csvPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temp file %s left beside the outputs", e.Name())
		}
	}
}
