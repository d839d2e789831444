package graph

import (
	"errors"
	"fmt"
	"testing"
)

func TestFileErrorFormat(t *testing.T) {
	cases := []struct {
		e    *FileError
		want string
	}{
		{FileErrorf(ErrFormat, "a/b.txt", 3, 2, "bad %s", "thing"), "a/b.txt:3: column 2: bad thing"},
		{FileErrorf(ErrRange, "a/b.txt", 7, 0, "too big"), "a/b.txt:7: too big"},
		{FileErrorf(ErrMissing, "dir", 0, 0, "gone"), "dir: gone"},
		{FileErrorf(ErrFormat, "embedded:cora/raw/edge.csv.gz", 0, 4, "x"), "embedded:cora/raw/edge.csv.gz: column 4: x"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
		if !errors.Is(c.e, c.e.Err) || errors.Unwrap(c.e) != c.e.Err {
			t.Errorf("%q does not unwrap to its kind", c.e)
		}
		var fe *FileError
		if wrapped := fmt.Errorf("loading: %w", c.e); !errors.As(wrapped, &fe) || fe != c.e {
			t.Errorf("errors.As through a wrapper failed for %q", c.e)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	// The refinements are ErrFormat too; the base kinds are distinct.
	for _, k := range []error{ErrCount, ErrSplit, ErrTruncated, ErrVersion, ErrChecksum} {
		if !errors.Is(k, ErrFormat) {
			t.Errorf("%v is not an ErrFormat", k)
		}
		if errors.Is(k, ErrRange) || errors.Is(k, ErrMissing) {
			t.Errorf("%v wraps another base kind", k)
		}
		if e := FileErrorf(k, "f", 1, 0, "m"); !errors.Is(e, ErrFormat) || !errors.Is(e, k) {
			t.Errorf("FileError of %v does not match", k)
		}
	}
	for _, k := range []error{ErrRange, ErrMissing} {
		if errors.Is(k, ErrFormat) {
			t.Errorf("%v is an ErrFormat", k)
		}
	}
}
