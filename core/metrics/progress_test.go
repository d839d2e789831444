package metrics

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	cases := []struct {
		name    string
		total   int
		updates []int
		want    []string // substrings of the output
		empty   bool
	}{
		{"disabled without a writer", 10, []int{1, 10}, nil, true},
		{"zero total", 0, []int{0}, nil, true},
		{"final step always drawn", 4, []int{4}, []string{"4/4", "100%", "ETA 0.0s", "status"}, false},
		{"first step has an ETA", 4, []int{1}, []string{"1/4", " 25%", "ETA "}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			var p *Progress
			if c.empty && c.total > 0 {
				p = NewProgress(nil, "train", c.total)
			} else {
				p = NewProgress(&buf, "train", c.total)
			}
			for _, u := range c.updates {
				p.Update(u, "status")
			}
			p.Done()
			out := buf.String()
			if c.empty {
				if out != "" {
					t.Fatalf("output %q, want none", out)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q lacks %q", out, w)
				}
			}
			if !strings.HasSuffix(out, "\n") {
				t.Errorf("Done did not end the line: %q", out)
			}
		})
	}
}

func TestPeakRSS(t *testing.T) {
	if PeakRSS() <= 0 {
		t.Fatal("PeakRSS is not positive")
	}
}

func TestLogProgressPlain(t *testing.T) {
	var buf bytes.Buffer // not a terminal: plain lines
	p := NewLogProgress(&buf, "load", 100, time.Hour, func(n int) string { return fmt.Sprintf("%d B", n) })
	p.Update(10, "") // before the first interval: nothing
	p.Update(100, "done")
	p.Done()
	out := buf.String()
	if strings.Contains(out, "\r") || strings.Contains(out, "\x1b") {
		t.Errorf("plain output has terminal control characters: %q", out)
	}
	if want := "load 100% (100 B of 100 B) "; !strings.HasPrefix(out, want) || !strings.HasSuffix(out, " done\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("output %q, want one line starting %q", out, want)
	}
	buf.Reset()
	p = NewLogProgress(&buf, "load", 100, time.Nanosecond, nil)
	time.Sleep(time.Millisecond)
	p.Update(50, "")
	if out := buf.String(); !strings.Contains(out, "load  50% (50 of 100)") || !strings.Contains(out, "ETA") {
		t.Errorf("interval line %q", out)
	}
}
