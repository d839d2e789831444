package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/core/comm"
	"strata/core/config"
	"strata/core/train"
	"strata/plugins/wasm"
)

// watchedComm is rank 0 of two whose watchdog the test fires.
type watchedComm struct {
	comm.Comm
	stall func(what string)
}

func (w *watchedComm) OnStall(f func(what string)) { w.stall = f }

// syncBuffer is a buffer two goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestGroupWatch: a run of several ranks whose loop waits forever (a
// collective on a dead rank, here an evaluation hook that blocks) is ended
// from outside, after a signal or when the communicator's watchdog fires:
// the result line is printed with its status, output.csv and output.log
// hold the finished epochs, and after a signal the process exits 130. A
// run that ends by itself is left alone.
func TestGroupWatch(t *testing.T) {
	cases := []struct {
		name, status string
		blockAt      int  // the epoch whose evaluation blocks; -1: none
		signal       bool // else the watchdog fires
		exit         int  // -1: the watch does not exit
	}{
		{"signal", train.StatusInterrupted, 2, true, exitInterrupted},
		{"watchdog", train.StatusFailed, 2, false, -1},
		{"ends by itself", "", -1, true, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			csvPath, logPath := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out.log")
			cfg, err := config.Parse("watch.toml", []byte("[data]\ndataset = \"embedded:cora\"\n[train]\nepochs = 4\n[output]\nprogress = \"off\"\n"),
				"output.csv="+csvPath, "output.log="+logPath)
			if err != nil {
				t.Fatal(err)
			}
			blocked, release := make(chan struct{}), make(chan struct{})
			wc := &watchedComm{Comm: comm.NewLocal(2)[0]}
			var stdout, stderr syncBuffer
			rescue := &train.Rescue{}
			w := newGroupWatch(wc, rescue, &stdout, &stderr)
			w.grace = 10 * time.Millisecond
			exited := make(chan int, 1)
			w.exit = func(code int) { exited <- code }
			watchCtx, signal := context.WithCancel(context.Background())
			defer signal()
			stop := w.start(watchCtx)
			done := make(chan error, 1)
			go func() {
				_, err := train.Run(context.Background(), cfg, train.Options{Host: wasm.Host{Options: wasm.Options{CacheDir: wasmCache()}}, Rescue: rescue,
					BeforeEval: func(ep int) {
						if ep == c.blockAt {
							close(blocked)
							<-release
						}
					}})
				done <- err
			}()
			if c.blockAt < 0 {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				signal() // after the run: nothing to rescue
				stop()
				if stdout.String() != "" || len(exited) != 0 {
					t.Fatalf("the watch printed %q or exited after a run that ended by itself", stdout.String())
				}
				return
			}
			<-blocked
			if c.signal {
				signal()
				if code := <-exited; code != c.exit {
					t.Errorf("exit %d, want %d", code, c.exit)
				}
			} else {
				wc.stall("MPI_Alltoallv (grads)")
				if !strings.Contains(stderr.String(), "MPI_Alltoallv (grads) waited too long") {
					t.Errorf("stderr %q does not name the collective", stderr.String())
				}
			}
			close(release)
			if err := <-done; !errors.Is(err, train.ErrRescued) {
				t.Errorf("the run returned %v, want ErrRescued", err)
			}
			stop()
			var res train.Result
			if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil || res.Status != c.status || res.Epochs != c.blockAt {
				t.Fatalf("stdout %q (%v): want one result line, status %q, %d epochs", stdout.String(), err, c.status, c.blockAt)
			}
			b, err := os.ReadFile(csvPath)
			if err != nil || bytes.Count(b, []byte("\n")) != 1+c.blockAt {
				t.Errorf("output.csv: %q (%v), want a header and %d rows", b, err, c.blockAt)
			}
			if b, err := os.ReadFile(logPath); err != nil || bytes.Count(b, []byte("\n")) != c.blockAt {
				t.Errorf("output.log: %d lines (%v), want %d", bytes.Count(b, []byte("\n")), err, c.blockAt)
			}
		})
	}
}
