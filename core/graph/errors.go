package graph

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. Every loader error wraps one of them, so callers can
// classify failures with errors.Is. ErrCount, ErrSplit, ErrTruncated,
// ErrVersion and ErrChecksum are refinements of ErrFormat: errors.Is(err,
// ErrFormat) also holds for them.
var (
	// ErrFormat: the file content does not follow the expected format
	// (bad number, wrong column count, bad header, empty file...).
	ErrFormat = errors.New("malformed input")
	// ErrRange: a well-formed value lies outside its allowed range (node id
	// >= number of nodes, negative id, label >= classes...).
	ErrRange = errors.New("value out of range")
	// ErrMissing: a required file or directory does not exist.
	ErrMissing = errors.New("missing file")
	// ErrCount: a count disagrees with another file (edge lines vs
	// num-edge-list, label lines vs num-node-list...).
	ErrCount = fmt.Errorf("count mismatch: %w", ErrFormat)
	// ErrSplit: a train/valid/test split is invalid (duplicate id, overlap
	// between splits, unlabeled node in a split).
	ErrSplit = fmt.Errorf("invalid split: %w", ErrFormat)
	// ErrTruncated: the file ends early (truncated gzip stream or binary).
	ErrTruncated = fmt.Errorf("truncated file: %w", ErrFormat)
	// ErrVersion: a binary file of an unsupported format version.
	ErrVersion = fmt.Errorf("unsupported version: %w", ErrFormat)
	// ErrChecksum: a checksum does not match the data it covers.
	ErrChecksum = fmt.Errorf("checksum mismatch: %w", ErrFormat)
)

// FileError reports a problem at a position in an input file. File is the
// path as given by the caller (or "embedded:<name>/..."), Line is 1-based
// (0 when the problem is not tied to a line) and Column is the 1-based
// field index (0 when not applicable). Err is one of the sentinel errors.
type FileError struct {
	File   string
	Line   int
	Column int
	Msg    string
	Err    error
}

// Error formats the error as "file:line: column c: msg".
func (e *FileError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	s += ": "
	if e.Column > 0 {
		s += "column " + strconv.Itoa(e.Column) + ": "
	}
	return s + e.Msg
}

// Unwrap returns the sentinel error.
func (e *FileError) Unwrap() error { return e.Err }

// FileErrorf builds a *FileError of kind at file:line, column col.
func FileErrorf(kind error, file string, line, col int, format string, args ...any) *FileError {
	return &FileError{File: file, Line: line, Column: col, Msg: fmt.Sprintf(format, args...), Err: kind}
}
