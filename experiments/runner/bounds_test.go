package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"strata/internal/worktest"
)

// parseAllocBound bounds what parsing and planning the refused
// experiments of these tests allocate (at most a few MiB measured): an
// expansion of the runs they declare allocates gigabytes (8 million runs
// took 5 GB on --dry-run).
const parseAllocBound = 64 << 20

// axes writes n [[axis]] tables; key(i) names the i-th, with values
// values and, when zip(i) is not "", that zip group.
func axes(n, values int, key func(i int) string, zip func(i int) string) string {
	var b strings.Builder
	vals := make([]string, values)
	for v := range vals {
		vals[v] = fmt.Sprint(v + 1)
	}
	for i := range n {
		fmt.Fprintf(&b, "[[axis]]\nkey = %q\nvalues = [%s]\n", key(i), strings.Join(vals, ", "))
		if z := zip(i); z != "" {
			fmt.Fprintf(&b, "zip = %q\n", z)
		}
	}
	return b.String()
}

func distinct(i int) string { return fmt.Sprintf("train.a%d", i) }
func noZip(int) string      { return "" }

// TestRunCountBound: an experiment whose axes and seeds multiply to more
// than MaxRuns is refused by Parse (and NewPlan) in well under a second,
// before anything is expanded, with the sizes and the fix; the product is
// checked before each multiplication, so axes whose product overflows an
// int are refused too, not wrapped to a small count. The limit itself,
// and zipped axes, pass.
func TestRunCountBound(t *testing.T) {
	cases := []struct {
		name  string
		head  string
		want  []string // in the error; nil = Parse succeeds
		cells int      // of a parsed experiment, from its dims
	}{
		{"3 axes of 200 values", axes(3, 200, distinct, noZip), []string{"exp.toml:3:", "more than 100000 runs", `axis "train.a0": 200 values × axis "train.a1": 200 values`, "split it", "zip axes"}, 0},
		{"2 axes of 300 values and 2 seeds", "seeds = [0, 1]\n" + axes(2, 300, distinct, noZip), []string{"more than 100000 runs", "× 2 seeds"}, 0},
		{"12 axes of 200 values (overflows int64)", axes(12, 200, distinct, noZip), []string{"more than 100000 runs", "4 more axes"}, 0},
		{"exactly the limit", "seeds = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n" + axes(2, 100, distinct, noZip), nil, 10000},
		{"3 axes of 200 values, two zipped", axes(3, 200, distinct, func(i int) string {
			if i > 0 {
				return "g"
			}
			return ""
		}), nil, 40000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := "name = \"big\"\nmetrics = [\"test_acc\"]\n" + c.head + base
			var e *Experiment
			var err error
			worktest.MaxAlloc(t, "Parse", parseAllocBound, func() { e, err = Parse("exp.toml", []byte(text)) })
			if c.want == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				n := 1
				for _, d := range e.dims() {
					n *= d.n
				}
				if n != c.cells {
					t.Errorf("%d cells, want %d", n, c.cells)
				}
				return
			}
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestNewPlanRunCountBound: NewPlan refuses an experiment over the bound
// even when it was not made by Parse, before expanding it.
func TestNewPlanRunCountBound(t *testing.T) {
	e := mustParse(t, exp(fakeHead))
	e.Axes[0].Values = make([]any, MaxRuns) // × 2 seeds
	var err error
	worktest.MaxAlloc(t, "NewPlan", parseAllocBound, func() { _, err = NewPlan(context.Background(), e, "test", nil) })
	if err == nil || !strings.Contains(err.Error(), "more than 100000 runs") {
		t.Fatalf("err = %v", err)
	}
}

// TestDuplicateAxes: a repeated axis key is reported once per repetition,
// naming the first table's line, in linear time; thousands of them give
// MaxErrors lines and a count of the rest, not one line per pair.
func TestDuplicateAxes(t *testing.T) {
	same := func(int) string { return "model.hidden" }
	cases := []struct {
		name  string
		n     int
		lines int // lines of the error
	}{
		{"two", 2, 1},
		{"three", 3, 2},
		{"5000", 5000, MaxErrors + 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := "name = \"dup\"\nmetrics = [\"test_acc\"]\n" + axes(c.n, 1, same, noZip) + base
			_, err := Parse("exp.toml", []byte(text))
			if err == nil {
				t.Fatal("Parse accepted duplicate axes")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != c.lines {
				t.Errorf("%d error lines, want %d:\n%.2000s", len(lines), c.lines, err)
			}
			for _, l := range lines[:min(len(lines), MaxErrors)] {
				if !strings.Contains(l, `axis "model.hidden" is already defined on line 3`) {
					t.Errorf("line %q does not name the first axis (line 3)", l)
				}
			}
			if c.n > MaxErrors+1 && !strings.Contains(lines[len(lines)-1], fmt.Sprintf("and %d more problems", c.n-1-MaxErrors)) {
				t.Errorf("last line %q does not count the rest", lines[len(lines)-1])
			}
		})
	}
	// Linear in the number of duplicates (5,000 took 13 s and printed
	// 769 MB of errors when each was compared with every other).
	worktest.Linear(t, "Parse of duplicate axes", 2500, func(n int) {
		Parse("exp.toml", []byte("name = \"dup\"\nmetrics = [\"test_acc\"]\n"+axes(n, 1, same, noZip)+base))
	})
}
