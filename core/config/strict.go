package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/BurntSushi/toml"

	"strata/core/registry"
)

// DecodeStrict decodes the TOML document data into the struct that into
// points to, with the rules of a config: the struct's `toml` tags declare
// every key (an undeclared key is an error naming the closest declared one,
// or listing them), a value must have the field's type, and the `enum`,
// `range`, `special`, `word`, `required` and `example` tags are enforced as
// Parse enforces them (see the package documentation). file names the
// document in errors, which carry its lines. A config (Parse) and an
// experiment file (experiments/runner) go through this one decoder.
//
// Beyond a config's field types, DecodeStrict also fills:
//
//   - a slice of structs: an array of tables ([[name]]); errors about the
//     keys of an entry point at that entry's lines;
//   - an `any` field: the TOML value as toml.Decode builds it (int64,
//     float64, string, bool, time.Time, []any, map[string]any), unchecked;
//   - a map with string keys other than map[string]any (which is a table
//     of integers, floats and booleans, as model.options): a table whose
//     values each decode into the map's element type;
//   - a field whose pointer implements ValueDecoder: it decodes its value
//     itself (a key that takes a string or a table);
//   - an untagged field of type Pos in a struct: where that struct's table
//     and each of its keys are, for the checks the caller makes after
//     decoding.
//
// Every problem is reported: the error is a single *Error or several
// joined with errors.Join, sorted by line (Errors lists them). A key with
// an error keeps the value into held before; the other keys are decoded,
// so that the caller can check what did decode. On a TOML syntax error
// nothing is decoded and the top-level Pos is not Found.
func DecodeStrict(file string, data []byte, into any) error {
	rv := reflect.ValueOf(into)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("config.DecodeStrict: into must be a non-nil pointer to a struct, got %T", into))
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return syntaxError(file, err)
	}
	if raw == nil {
		raw = map[string]any{}
	}
	src := &source{file: file, pos: map[string]position{}}
	for k, line := range scanEntryLines(string(data)) {
		src.pos[k] = position{line: line}
	}
	d := &decoder{src: src}
	d.unknown = d.unknownIn
	d.table(nil, raw, rv.Elem(), fieldsOf(rv.Elem().Type()), d.unknown)
	return join(d.errs)
}

// ValueDecoder is implemented (on the pointer) by a field type that
// decodes its TOML value itself, for a key whose value is not of one fixed
// type: a string or a table, a string or a list. DecodeTOML gets the key's
// dotted name, for messages, and the value as toml.Decode builds it; each
// error it returns (several with errors.Join) becomes an *Error at the
// key's line, its text the message, so it should name the key.
type ValueDecoder interface {
	DecodeTOML(key string, v any) error
}

var (
	valueDecoderType = reflect.TypeFor[ValueDecoder]()
	posType          = reflect.TypeFor[Pos]()
)

// Pos is where a table decoded by DecodeStrict is in its file. A struct
// with an untagged field of type Pos gets it filled with the position of
// its table (of the document, for the top-level struct).
type Pos struct {
	File string // the file as given to DecodeStrict
	// Key is the table's dotted key ("axis" for an entry of [[axis]];
	// "" for the document).
	Key string
	// Line is the line of the table's header (or of its first key); 0
	// for the document or a table that is not in the file.
	Line  int
	found bool
	keys  map[string]int // key of the table -> its line
}

// Found reports whether the table is in the document (the document
// itself: whether it decoded, i.e. had no syntax error).
func (p Pos) Found() bool { return p.found }

// Has reports whether the table sets key.
func (p Pos) Has(key string) bool {
	_, ok := p.keys[key]
	return ok
}

// KeyLine is the line of key in the table, or the table's line when the
// table does not set it.
func (p Pos) KeyLine(key string) int {
	if l, ok := p.keys[key]; ok && l > 0 {
		return l
	}
	return p.Line
}

// Path is the dotted name of key in the table ("axis.values").
func (p Pos) Path(key string) string {
	if p.Key == "" {
		return toml.Key{key}.String()
	}
	return p.Key + "." + toml.Key{key}.String()
}

// Errorf returns an error located at key of the table (at the table
// when key is "" or not set).
func (p Pos) Errorf(key, format string, args ...any) *Error {
	e := &Error{File: p.File, Line: p.KeyLine(key), Key: p.Key, Msg: fmt.Sprintf(format, args...)}
	if key != "" {
		e.Key = p.Path(key)
	}
	return e
}

// entry is the i-th entry of the array of tables at depth (the length of
// its key path).
type entry struct{ depth, i int }

// posPath is the key of path in the position map: the index of the
// entry being decoded ("#1") follows the name of each array of tables, as
// scanEntryLines records them.
func (d *decoder) posPath(path []string) []string {
	if len(d.entries) == 0 {
		return path
	}
	out := make([]string, 0, len(path)+len(d.entries))
	for j, p := range path {
		out = append(out, p)
		for _, e := range d.entries {
			if e.depth == j+1 {
				out = append(out, "#"+strconv.Itoa(e.i))
			}
		}
	}
	return out
}

// errorAt is source.errorAt for the key path being decoded, inside the
// entries of arrays of tables.
func (d *decoder) errorAt(path []string, msg string) *Error {
	e := d.src.errorAt(d.posPath(path), msg)
	e.Key = toml.Key(path).String()
	return e
}

// line is the line of the key path (of its closest located parent).
func (d *decoder) line(path []string) int { return d.errorAt(path, "").Line }

// inEntry reports whether the table at path is an entry of an array of
// tables.
func (d *decoder) inEntry(path []string) bool {
	return slices.ContainsFunc(d.entries, func(e entry) bool { return e.depth == len(path) })
}

// tableName is how messages name the table at path: "[name]" or
// "[[name]]" for an entry of an array of tables.
func (d *decoder) tableName(path []string) string {
	if d.inEntry(path) {
		return "[[" + toml.Key(path).String() + "]]"
	}
	return "[" + toml.Key(path).String() + "]"
}

// setPos fills the Pos field of a struct decoded from the table m at path.
func (d *decoder) setPos(path []string, m map[string]any, rv reflect.Value) {
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Type != posType || sf.Tag.Get("toml") != "" || !sf.IsExported() {
			continue
		}
		p := Pos{File: d.src.file, Key: toml.Key(path).String(), keys: make(map[string]int, len(m))}
		if len(path) > 0 {
			p.Line = d.line(path)
		}
		// An absent section is decoded from an empty table: found when
		// the document has it (the document is always found).
		_, p.found = d.src.pos[toml.Key(d.posPath(path)).String()]
		p.found = p.found || len(path) == 0 || len(m) > 0
		for k := range m {
			p.keys[k] = d.line(append(slices.Clone(path), k))
		}
		rv.Field(i).Set(reflect.ValueOf(p))
	}
}

func isValueDecoder(t reflect.Type) bool { return reflect.PointerTo(t).Implements(valueDecoderType) }

// isTable reports whether t decodes from a table into its fields.
func isTable(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t != pluginType && !isValueDecoder(t)
}

// custom hands v to the field's ValueDecoder; false when it has none.
func (d *decoder) custom(path []string, v any, rv reflect.Value) bool {
	if !rv.CanAddr() || !isValueDecoder(rv.Type()) {
		return false
	}
	err := rv.Addr().Interface().(ValueDecoder).DecodeTOML(d.name(path), plain(v))
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else if err != nil {
		list = []error{err}
	}
	for _, e := range list {
		d.errs = append(d.errs, d.errorAt(path, e.Error()))
	}
	return true
}

// tables decodes an array of tables, entry by entry. The entries are kept
// whatever their errors, so that checks after decoding see every entry.
func (d *decoder) tables(path []string, arr []any, out reflect.Value, elem *field) {
	for i, e := range arr {
		d.entries = append(d.entries, entry{depth: len(path), i: i})
		d.value(path, e, out.Index(i), elem)
		d.entries = d.entries[:len(d.entries)-1]
	}
}

// anyValue stores a TOML value, whatever its type, in an `any` field.
func (d *decoder) anyValue(path []string, v any, rv reflect.Value) {
	if rv.NumMethod() > 0 {
		d.errorf(path, "%s: cannot be set from a config (Go type %s)", d.name(path), rv.Type())
		return
	}
	if v = plain(v); v != nil {
		rv.Set(reflect.ValueOf(v))
	}
}

// mapValue decodes a table into a map with string keys, each value into
// the map's element type.
func (d *decoder) mapValue(path []string, v any, rv reflect.Value, f *field) {
	typ := rv.Type()
	if typ.Key().Kind() != reflect.String {
		d.errorf(path, "%s: cannot be set from a config (Go type %s)", d.name(path), typ)
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.typeError(path, f, v)
		return
	}
	if len(m) == 0 {
		rv.Set(reflect.Zero(typ)) // an empty table is the same as none
		return
	}
	out := reflect.MakeMapWithSize(typ, len(m))
	for _, k := range d.sortedKeys(path, m) {
		kp := append(slices.Clone(path), k)
		ev := reflect.New(typ.Elem()).Elem()
		before := len(d.errs)
		d.value(kp, m[k], ev, &field{key: k, typ: typ.Elem()})
		if len(d.errs) == before {
			out.SetMapIndex(reflect.ValueOf(k).Convert(typ.Key()), ev)
		}
	}
	rv.Set(out)
}

// exampleText is the example value of a field as TOML: quoted for a
// string key, as written for a table or an array.
func (f *field) exampleText() string {
	if f.typ.Kind() == reflect.String {
		return strconv.Quote(f.example)
	}
	return f.example
}

// unknownIn reports an undeclared key of a table decoded by DecodeStrict,
// naming the table and the closest declared key, or listing them.
func (d *decoder) unknownIn(path []string, known []string) {
	last := path[len(path)-1]
	parent := path[:len(path)-1]
	where := "the top level"
	if len(parent) > 0 {
		where = d.tableName(parent)
	}
	if sug := registry.Suggest(last, known); sug != "" {
		d.errorf(path, "unknown key %q in %s (did you mean %q?)", last, where, sug)
		return
	}
	if len(known) == 0 {
		d.errorf(path, "unknown key %q in %s, which takes no keys", last, where)
		return
	}
	d.errorf(path, "unknown key %q in %s; the keys are %s", last, where, quoteList(known))
}

// scanEntryLines is scanKeyLines for documents with arrays of tables: it
// maps every key path to the line that defines it, recording the keys of
// each entry of [[name]] under "name.#i" (i from 0), so that each entry's
// keys have their own lines. The array itself ("name") is recorded at its
// first entry.
func scanEntryLines(text string) map[string]int {
	sc := &keyScanner{s: text, line: 1, out: map[string]int{}}
	entries := map[string]int{} // array of tables (indexed key) -> entries so far
	// index inserts the entry index after each array of tables in path.
	index := func(path []string) []string {
		var out []string
		for _, p := range path {
			out = append(out, p)
			if n, ok := entries[toml.Key(out).String()]; ok {
				out = append(out, "#"+strconv.Itoa(n-1))
			}
		}
		return out
	}
	var table []string
	for {
		sc.skipAll()
		if sc.eof() {
			return sc.out
		}
		start := sc.i
		if sc.peek() == '[' {
			sc.i++
			array := sc.peek() == '['
			if array {
				sc.i++
			}
			path := sc.key()
			if array && len(path) > 0 {
				table = append(index(path[:len(path)-1]), path[len(path)-1])
				k := toml.Key(table).String()
				table = append(table, "#"+strconv.Itoa(entries[k]))
				entries[k]++
			} else {
				table = index(path)
			}
			sc.record(table)
			// Skip "]" / "]]" and the rest of the line (a comment).
			for !sc.eof() && sc.s[sc.i] != '\n' {
				sc.i++
			}
		} else {
			full := append(slices.Clone(table), sc.key()...)
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
