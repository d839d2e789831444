// Package metrics holds run-time measurement helpers (a progress bar with
// an ETA, peak resident memory, I/O counters) and the evaluation metrics
// that train.metrics names, each registered from its own file (Register).
package metrics

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Progress draws a one-line bar with an ETA on a terminal-like writer, or,
// in plain mode (NewLogProgress), prints one line every few seconds.
type Progress struct {
	w       io.Writer
	label   string
	total   int
	start   time.Time
	last    time.Time
	enabled bool
	every   time.Duration // > 0: plain lines at this interval instead of a bar
	unit    func(n int) string
}

// NewLogProgress returns a Progress that draws a bar when w is a terminal
// and otherwise prints a plain "label 40% (done/total) elapsed ETA status"
// line at most once per every (and at the end), which suits log files and
// CI. unit formats counts (nil prints them as integers).
func NewLogProgress(w io.Writer, label string, total int, every time.Duration, unit func(n int) string) *Progress {
	p := NewProgress(w, label, total)
	p.unit = unit
	if f, ok := w.(*os.File); !ok || !IsTerminal(f) {
		p.every = every
		p.last = p.start // the first line after one interval
	}
	return p
}

// NewProgress returns a bar over total steps; a nil writer disables it.
func NewProgress(w io.Writer, label string, total int) *Progress {
	now := time.Now()
	return &Progress{w: w, label: label, total: total, start: now, enabled: w != nil && total > 0}
}

// IsTerminal reports whether f is a character device.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Update redraws the bar after done steps, with a short status text. Redraws
// are throttled to ten per second, except for the final step.
func (p *Progress) Update(done int, status string) {
	if !p.enabled {
		return
	}
	now := time.Now()
	if p.every > 0 {
		if done < p.total && now.Sub(p.last) < p.every {
			return
		}
		p.last = now
		p.line(now, done, status)
		return
	}
	if done < p.total && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	const width = 24
	frac := float64(done) / float64(p.total)
	fill := int(frac * width)
	elapsed := now.Sub(p.start)
	eta := "?"
	if done > 0 {
		eta = fmtDur(time.Duration(float64(elapsed) / float64(done) * float64(p.total-done)))
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %3.0f%% %s ETA %s %s\x1b[K", p.label,
		strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, p.total, 100*frac,
		fmtDur(elapsed), eta, status)
}

// line prints one plain progress line.
func (p *Progress) line(now time.Time, done int, status string) {
	count := func(n int) string {
		if p.unit != nil {
			return p.unit(n)
		}
		return fmt.Sprint(n)
	}
	elapsed := now.Sub(p.start)
	eta := "?"
	if done > 0 {
		eta = fmtDur(time.Duration(float64(elapsed) / float64(done) * float64(p.total-done)))
	}
	if status != "" {
		status = " " + status
	}
	fmt.Fprintf(p.w, "%s %3.0f%% (%s of %s) %s ETA %s%s\n", p.label, 100*float64(done)/float64(p.total),
		count(done), count(p.total), fmtDur(elapsed), eta, status)
}

// Done ends the bar's line.
func (p *Progress) Done() {
	if p.enabled && p.every == 0 {
		fmt.Fprintln(p.w)
	}
}

func fmtDur(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
