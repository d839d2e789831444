package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Experiment files (experiments/runner) are decoded by DecodeStrict; an
// inline [base] table holds a config, which ParseTable parses.

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
