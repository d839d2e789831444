package config

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
)

// Error is one problem in a config. Parse and Load return a single *Error
// or several joined with errors.Join (one per line); use Errors to list
// them.
type Error struct {
	File     string // the config file's name as given ("" for none)
	Line     int    // 1-based line of the key (0 when unknown)
	Col      int    // 1-based column, for TOML syntax errors (else 0)
	Override string // "--set key=value" when the key came from an override
	Key      string // dotted key path ("" when the error is not about a key)
	Msg      string // the message, which names the key
}

// Error formats the error as "file:line: msg", "file:line:col: msg" or
// "--set key=value: msg".
func (e *Error) Error() string {
	return e.Location() + ": " + e.Msg
}

// Location is the "file:line", "file:line:col" or "--set key=value" part.
func (e *Error) Location() string {
	if e.Override != "" {
		return e.Override
	}
	loc := e.File
	if loc == "" {
		loc = "<config>"
	}
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
		if e.Col > 0 {
			loc += ":" + strconv.Itoa(e.Col)
		}
	}
	return loc
}

// Errors returns the config errors contained in err (joined or single), in
// order; nil when err holds none.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var e *Error
		if errors.As(err, &e) {
			out = append(out, e)
		}
	}
	walk(err)
	return out
}

// join sorts errors by position (file errors by line, then overrides) and
// joins them; nil for none.
func join(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		if ao, bo := a.Override != "", b.Override != ""; ao != bo {
			if bo {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Line, b.Line)
	})
	if len(errs) == 1 {
		return errs[0]
	}
	list := make([]error, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return errors.Join(list...)
}
