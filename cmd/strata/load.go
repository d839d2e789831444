package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"strata/core/graph"
	"strata/core/metrics"
)

// Load progress settings: nothing is printed for a load that ends within
// quietFor; after that a bar (on a terminal) or a plain line every
// plainEvery (in a log) shows the bytes read so far with an ETA.
const (
	quietFor   = time.Second
	plainEvery = 5 * time.Second
)

// openDataset opens spec like graph.Open, reporting progress on stderr
// while it loads. Progress is the process's bytes read (Linux
// /proc/self/io rchar) against the size of the dataset's files, so the
// loaders need no hooks; where that counter or the size is unknown (other
// systems, embedded and R-MAT datasets) nothing is printed.
func openDataset(ctx context.Context, spec, label string, stderr io.Writer) (*graph.Dataset, error) {
	return openDatasetEvery(ctx, spec, label, stderr, quietFor, plainEvery)
}

// openDatasetEvery is openDataset with its quiet time and log interval.
func openDatasetEvery(ctx context.Context, spec, label string, stderr io.Writer, quiet, every time.Duration) (*graph.Dataset, error) {
	var d *graph.Dataset
	err := trackIO(stderr, label, "read", specBytes(spec), "rchar", quiet, every, func() error {
		var err error
		d, err = graph.OpenContext(ctx, spec)
		return err
	})
	return d, err
}

// trackIO runs work, showing its progress on stderr as the change of the
// /proc/self/io counter (rchar: bytes read, wchar: bytes written) against
// total bytes, after quiet has passed (a bar on a terminal, a plain line
// every every otherwise). Without the counter or a total it just runs work.
func trackIO(stderr io.Writer, label, verb string, total int64, counter string, quiet, every time.Duration, work func() error) error {
	base, haveIO := ioCounter(counter)
	if total <= 0 || !haveIO || stderr == nil {
		return work()
	}
	done := make(chan error, 1)
	go func() { done <- work() }()
	var bar *metrics.Progress
	newBar := func() *metrics.Progress {
		return metrics.NewLogProgress(stderr, label, int(total), every, func(n int) string { return humanBytes(int64(n)) })
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	quietC := time.After(quiet)
	for {
		select {
		case err := <-done:
			if bar == nil && time.Since(start) >= quiet {
				bar = newBar()
			}
			if bar != nil {
				bar.Update(int(total), "done")
				bar.Done()
			}
			return err
		case <-quietC:
			bar = newBar()
		case <-tick.C:
			if bar != nil {
				now, _ := ioCounter(counter)
				bar.Update(int(min(max(now-base, 0), total-1)), verb)
			}
		}
	}
}

// specBytes is the size of the files a dataset spec names (0 if unknown).
func specBytes(spec string) int64 {
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		if _, err := os.Stat(spec); err != nil {
			spec = spec[:i]
		}
	}
	st, err := os.Stat(spec)
	if err != nil {
		return 0
	}
	if !st.IsDir() {
		return st.Size()
	}
	var total int64
	filepath.WalkDir(spec, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// readBytes returns the bytes this process has read so far (rchar).
func readBytes() (int64, bool) { return ioCounter("rchar") }

// ioCounter returns one counter of /proc/self/io: rchar (bytes read) or
// wchar (bytes written) by this process so far.
func ioCounter(name string) (int64, bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(name+": ")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
