package metrics

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// IOTrack describes how TrackIO shows the progress of some reading or
// writing: nothing for work that ends within Quiet; after that a bar (on
// a terminal) or a plain line every Every (in a log) with the bytes so far
// against Total and an ETA.
type IOTrack struct {
	Label   string        // what is done, e.g. "train: loading"
	Verb    string        // the status word while it runs: "read", "written"
	Total   int64         // bytes expected; 0 (unknown) shows nothing
	Counter string        // the /proc/self/io counter: "rchar" or "wchar"
	Quiet   time.Duration // nothing is printed for work shorter than this
	Every   time.Duration // a plain line at most this often when not a terminal
}

// TrackIO runs work, showing its progress on w as the change of this
// process's /proc/self/io counter t.Counter, so the work itself needs no
// hooks. Without the counter (other systems), a total or a writer it just
// runs work.
func TrackIO(w io.Writer, t IOTrack, work func() error) error {
	base, haveIO := IOCounter(t.Counter)
	if t.Total <= 0 || !haveIO || w == nil {
		return work()
	}
	done := make(chan error, 1)
	go func() { done <- work() }()
	var bar *Progress
	newBar := func() *Progress {
		return NewLogProgress(w, t.Label, int(t.Total), t.Every, func(n int) string { return FormatBytes(int64(n)) })
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	quietC := time.After(t.Quiet)
	for {
		select {
		case err := <-done:
			if bar == nil && time.Since(start) >= t.Quiet {
				bar = newBar()
			}
			if bar != nil {
				bar.Update(int(t.Total), "done")
				bar.Done()
			}
			return err
		case <-quietC:
			bar = newBar()
		case <-tick.C:
			if bar != nil {
				now, _ := IOCounter(t.Counter)
				bar.Update(int(min(max(now-base, 0), t.Total-1)), t.Verb)
			}
		}
	}
}

// IOCounter returns one counter of /proc/self/io: rchar (bytes read) or
// wchar (bytes written) by this process so far; false where there is none.
func IOCounter(name string) (int64, bool) {
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

// FormatBytes formats a byte count with binary units ("1.5 GiB").
func FormatBytes(n int64) string {
	if n < 0 {
		return "more than 8 EiB"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
