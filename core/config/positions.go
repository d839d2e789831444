package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// The TOML decoder knows where each key is but does not export it, so the
// loader finds the lines itself: scanKeyLines walks the (already parsed,
// hence valid) TOML source and records the line of every [table] header,
// [[array]] header, key = value pair, dotted key and inline-table key.

// position is where a key was set: a line of the file, or an override.
type position struct {
	line     int
	override string // "--set key=value"
}

// source tracks the positions of the keys of one config.
type source struct {
	file string
	pos  map[string]position // toml.Key(path).String() -> position
	// spelled maps a moved key's new path to the old one the config
	// spelled it with (see alias), so that errors name what was written.
	spelled map[string]string
}

func newSource(file, text string) *source {
	src := &source{file: file, pos: map[string]position{}}
	for k, line := range scanKeyLines(text) {
		src.pos[k] = position{line: line}
	}
	return src
}

// errorAt returns an Error located at the key path (or its closest
// located parent).
func (s *source) errorAt(path []string, msg string) *Error {
	e := s.verbatimErrorAt(path, msg)
	e.Key, e.Msg = s.respell(e.Key), s.respell(e.Msg)
	return e
}

// verbatimErrorAt is errorAt without respelling the moved keys: for a
// message that names both spellings itself.
func (s *source) verbatimErrorAt(path []string, msg string) *Error {
	e := &Error{File: s.file, Key: toml.Key(path).String(), Msg: msg}
	for n := len(path); n > 0; n-- {
		if p, ok := s.pos[toml.Key(path[:n]).String()]; ok {
			e.Line, e.Override = p.line, p.override
			break
		}
	}
	return e
}

// respell rewrites the moved keys in text to the old spelling the config
// used for them, longest first (minibatch.store.x before minibatch.store).
func (s *source) respell(text string) string {
	news := slices.SortedFunc(maps.Keys(s.spelled), func(a, b string) int { return len(b) - len(a) })
	for _, n := range news {
		text = replaceKey(text, n, s.spelled[n])
	}
	return text
}

// replaceKey replaces the dotted key old in text by new where it stands as
// a whole key (not inside a longer name such as x.old or old_y).
func replaceKey(text, old, new string) string {
	var b strings.Builder
	for {
		i := strings.Index(text, old)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		end := i + len(old)
		whole := (i == 0 || !isKeyByte(text[i-1])) && (end == len(text) || !isKeyByte(text[end]) || text[end] == '.')
		b.WriteString(text[:i])
		if whole {
			b.WriteString(new)
		} else {
			b.WriteString(old)
		}
		text = text[end:]
	}
}

// isKeyByte reports whether c may be part of a bare TOML key or a dotted
// path.
func isKeyByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// setOverride records that an override set the key path, dropping the
// positions of the file's keys it replaces.
func (s *source) setOverride(path []string, arg string) {
	k := toml.Key(path).String()
	for old := range s.pos {
		if old == k || strings.HasPrefix(old, k+".") {
			delete(s.pos, old)
		}
	}
	s.pos[k] = position{override: arg}
}

// Bounds on a config's text, checked in linear time before the TOML
// decoder (whose cost grows faster than linearly with nesting) sees it.
const (
	// MaxConfigBytes is the largest config or experiment file accepted.
	MaxConfigBytes = 8 << 20
	// MaxNesting is the deepest key path accepted: tables, dotted key
	// parts, inline tables and arrays all count one level.
	MaxNesting = 64
)

// CheckText checks that a TOML document is within MaxConfigBytes and
// MaxNesting, in time linear in its size. Call it before toml.Decode on
// untrusted text; the error is an *Error naming file and line.
func CheckText(file string, data []byte) error {
	if _, err := scanChecked(file, string(data)); err != nil {
		return err
	}
	return nil
}

// scanChecked is scanKeyLines with the bounds of CheckText.
func scanChecked(file, text string) (map[string]int, error) {
	if len(text) > MaxConfigBytes {
		return nil, &Error{File: file, Msg: fmt.Sprintf("config is %d bytes, more than the limit of %d (%d MiB): is this the right file?", len(text), MaxConfigBytes, MaxConfigBytes>>20)}
	}
	sc := &keyScanner{s: text, line: 1, out: map[string]int{}, limit: MaxNesting}
	sc.document()
	if sc.deepLine > 0 {
		return nil, &Error{File: file, Line: sc.deepLine, Msg: fmt.Sprintf("nesting deeper than %d levels (tables, dotted keys, inline tables and arrays each count one): flatten this value", MaxNesting)}
	}
	return sc.out, nil
}

// scanKeyLines maps every key path (in toml.Key.String form) to the 1-based
// line that defines it. A parent of a dotted key or table header that is
// not defined on its own gets the line of its first child. It takes time
// linear in the text times the nesting depth; bound the depth with
// scanChecked first on untrusted text.
func scanKeyLines(text string) map[string]int {
	sc := &keyScanner{s: text, line: 1, out: map[string]int{}}
	sc.document()
	return sc.out
}

type keyScanner struct {
	s    string
	i    int
	line int
	out  map[string]int

	limit    int // deepest nesting allowed (0: no limit)
	depth    int // open arrays and inline tables
	deepLine int // line where the limit was passed (0: not passed)
}

// tooDeep reports whether a key path of n parts at the current bracket
// depth passes the limit; the first time, it records the line and ends the
// scan.
func (sc *keyScanner) tooDeep(n int) bool {
	if sc.deepLine > 0 {
		return true
	}
	if sc.limit > 0 && n+sc.depth > sc.limit {
		sc.deepLine = sc.line
		sc.i = len(sc.s)
		return true
	}
	return false
}

// clamp keeps the position within the text after a skip past an
// unterminated token (the scanner may run before the TOML decoder).
func (sc *keyScanner) clamp() {
	if sc.i > len(sc.s) {
		sc.i = len(sc.s)
	}
}

func (sc *keyScanner) eof() bool { return sc.i >= len(sc.s) }

func (sc *keyScanner) peek() byte {
	if sc.eof() {
		return 0
	}
	return sc.s[sc.i]
}

// record notes the line of path and, when not yet known, of its parents.
// A known prefix has all its own prefixes known, so the walk from the
// longest prefix stops at the first known one.
func (sc *keyScanner) record(path []string) {
	if sc.tooDeep(len(path)) {
		return
	}
	for n := len(path); n >= 1; n-- {
		k := toml.Key(path[:n]).String()
		if _, ok := sc.out[k]; ok {
			return
		}
		sc.out[k] = sc.line
	}
}

// skipSpace skips blanks on the current line.
func (sc *keyScanner) skipSpace() {
	for !sc.eof() && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t' || sc.s[sc.i] == '\r') {
		sc.i++
	}
}

// skipAll skips blanks, newlines and comments.
func (sc *keyScanner) skipAll() {
	for !sc.eof() {
		switch sc.s[sc.i] {
		case ' ', '\t', '\r':
			sc.i++
		case '\n':
			sc.i++
			sc.line++
		case '#':
			for !sc.eof() && sc.s[sc.i] != '\n' {
				sc.i++
			}
		default:
			return
		}
	}
}

func (sc *keyScanner) document() {
	var table []string
	for {
		sc.skipAll()
		if sc.eof() {
			return
		}
		start := sc.i
		if sc.peek() == '[' {
			sc.i++
			if sc.peek() == '[' {
				sc.i++
			}
			table = sc.key()
			sc.record(table)
			// Skip "]" / "]]" and the rest of the line (a comment).
			for !sc.eof() && sc.s[sc.i] != '\n' {
				sc.i++
			}
		} else {
			k := sc.key()
			full := append(append([]string(nil), table...), k...)
			sc.record(full)
			sc.skipSpace()
			if sc.peek() == '=' {
				sc.i++
			}
			sc.skipSpace()
			sc.value(full)
		}
		if sc.i == start { // cannot happen on valid TOML; never loop forever
			sc.i++
		}
	}
}

// key reads a possibly dotted, possibly quoted key.
func (sc *keyScanner) key() []string {
	var parts []string
	for {
		sc.skipSpace()
		switch sc.peek() {
		case '"':
			raw := sc.basicString()
			if s, err := strconv.Unquote(raw); err == nil {
				parts = append(parts, s)
			} else {
				parts = append(parts, strings.Trim(raw, `"`))
			}
		case '\'':
			j := strings.IndexByte(sc.s[sc.i+1:], '\'')
			if j < 0 {
				j = len(sc.s) - sc.i - 1
			}
			parts = append(parts, sc.s[sc.i+1:sc.i+1+j])
			sc.i += j + 2
			sc.clamp()
		default:
			st := sc.i
			for !sc.eof() && isBare(sc.s[sc.i]) {
				sc.i++
			}
			parts = append(parts, sc.s[st:sc.i])
		}
		sc.skipSpace()
		if sc.peek() != '.' || sc.tooDeep(len(parts)) {
			return parts
		}
		sc.i++
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// basicString reads a single-line "..." string and returns it with quotes.
func (sc *keyScanner) basicString() string {
	st := sc.i
	sc.i++
	for !sc.eof() && sc.s[sc.i] != '"' && sc.s[sc.i] != '\n' {
		if sc.s[sc.i] == '\\' {
			sc.i++
		}
		sc.i++
	}
	sc.clamp()
	if !sc.eof() && sc.s[sc.i] == '"' {
		sc.i++
	}
	return sc.s[st:sc.i]
}

// value skips one value, recording the keys of inline tables under path.
func (sc *keyScanner) value(path []string) {
	sc.clamp()
	rest := sc.s[sc.i:]
	switch {
	case strings.HasPrefix(rest, `"""`), strings.HasPrefix(rest, `'''`):
		delim := rest[:3]
		sc.i += 3
		for !sc.eof() && !strings.HasPrefix(sc.s[sc.i:], delim) {
			switch sc.s[sc.i] {
			case '\\':
				if delim == `"""` {
					sc.i++
					if !sc.eof() && sc.s[sc.i] == '\n' {
						sc.line++
					}
				}
			case '\n':
				sc.line++
			}
			sc.i++
		}
		sc.i += 3
		sc.clamp()
		for n := 0; n < 2 && sc.peek() == delim[0]; n++ { // """a"""" ends with quotes
			sc.i++
		}
	case strings.HasPrefix(rest, `"`):
		sc.basicString()
	case strings.HasPrefix(rest, `'`):
		j := strings.IndexByte(rest[1:], '\'')
		if j < 0 {
			j = len(rest) - 1
		}
		sc.i += j + 2
		sc.clamp()
	case strings.HasPrefix(rest, "["):
		sc.i++
		sc.depth++
		defer func() { sc.depth-- }()
		if sc.tooDeep(len(path)) {
			return
		}
		for {
			sc.skipAll()
			if sc.eof() {
				return
			}
			if sc.peek() == ']' {
				sc.i++
				return
			}
			st := sc.i
			sc.value(path)
			sc.skipAll()
			if sc.peek() == ',' {
				sc.i++
			} else if sc.i == st {
				sc.i++
			}
		}
	case strings.HasPrefix(rest, "{"): // its keys lengthen the path
		sc.i++
		for {
			sc.skipAll() // TOML 1.1 allows newlines in inline tables
			if sc.eof() {
				return
			}
			if sc.peek() == '}' {
				sc.i++
				return
			}
			st := sc.i
			k := append(append([]string(nil), path...), sc.key()...)
			sc.record(k)
			sc.skipSpace()
			if sc.peek() == '=' {
				sc.i++
			}
			sc.skipAll()
			sc.value(k)
			sc.skipAll()
			if sc.peek() == ',' {
				sc.i++
			} else if sc.i == st {
				sc.i++
			}
		}
	default: // number, boolean, date: up to a delimiter
		for !sc.eof() && !strings.ContainsRune(",]}\n#", rune(sc.s[sc.i])) {
			sc.i++
		}
	}
}
