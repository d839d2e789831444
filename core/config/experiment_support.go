package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Helpers for experiment files (experiments/runner), which embed a config
// or refer to one and are decoded with the same strictness.

// KeyLines maps every key path of a TOML document (in toml.Key.String
// form, "model.hidden") to the 1-based line that defines it. A key of an
// array of tables ([[axis]]) is recorded once, at its first occurrence.
func KeyLines(text string) map[string]int { return scanKeyLines(text) }

// SyntaxError converts a toml.Decode error to an *Error naming file, line
// and column.
func SyntaxError(file string, err error) error { return syntaxError(file, err) }

// ParseTable parses the config held in the top-level table of a larger
// TOML document (an experiment file's inline [base]). Errors name file and
// the lines of the document; relative paths in the config are relative to
// file's directory, as for Parse. overrides are as for Parse.
func ParseTable(file string, data []byte, table string, overrides ...string) (*Config, error) {
	if err := CheckText(file, data); err != nil {
		return nil, err
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, syntaxError(file, err)
	}
	raw, ok := doc[table].(map[string]any)
	if !ok {
		return nil, &Error{File: file, Key: table, Msg: fmt.Sprintf("%s: expected a table holding a config", table)}
	}
	src := newSource(file, "")
	prefix := toml.Key{table}.String() + "."
	for k, line := range scanKeyLines(string(data)) {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			src.pos[rest] = position{line: line}
		}
	}
	return decodeRaw(raw, src, file, overrides)
}
