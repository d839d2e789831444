package config

import (
	"slices"

	"fmt"
	"reflect"
	"strata/core/registry"
	"strconv"
	"strings"
	"sync"
)

var (
	configType = reflect.TypeFor[Config]()
	pluginType = reflect.TypeFor[Plugin]()
	anyMapType = reflect.TypeFor[map[string]any]()
)

// field is the schema of one key, read from a struct field's tags.
type field struct {
	key      string
	name     string // Go field name
	index    []int  // for reflect.Value.FieldByIndex (embedded structs flattened)
	typ      reflect.Type
	doc      string
	enum     []string
	rng      *interval
	special  *special
	word     *word
	required bool
	example  string
	ns       string   // registry namespace of a Plugin field
	modules  string   // registry namespace whose module names a string field takes
	aliases  []string // values a modules field takes beside the module names
	nohash   bool     // hash:"-": left out of the canonical form
	omitzero bool     // hash:"omitempty": left out of the canonical form when zero
	omitdef  bool     // hash:"omitdefault" (a section of Config): left out when it is the default
	moved    []string // moved:"train.overlap": a strategy's option that Config once held there (moved.go)
	docmods  string   // docmodules:"ns": the doc lists the registered modules of ns (data.dataset's formats)
	// valueAliases are other names of enum values (alias:"adamw=adam ..."), see aliases.go.
	valueAliases []valueAlias
}

// describe says how a config gives the special value: "or -1 (same as
// model.dropout)", or, for a value that stands for the key's absence
// (meaning "unset: ..."), "or left out (...)" — the sentinel itself is
// never offered.
func (s *special) describe() string {
	if unset, ok := s.unset(); ok {
		return "or left out (" + unset + ")"
	}
	return fmt.Sprintf("or %s (%s)", s.text, s.meaning)
}

// unset reports whether the special value stands for the key's absence,
// and what that means.
func (s *special) unset() (string, bool) { return strings.CutPrefix(s.meaning, "unset: ") }

// special is one extra allowed value outside a field's range.
type special struct {
	value   float64
	text    string // as written in the tag
	meaning string
}

// word is a string that an integer key also takes, standing for a value
// outside its range (train.micro_batches = "auto").
type word struct {
	text    string
	value   int64
	meaning string
}

var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf returns the keys of a struct type: its exported fields with a
// `toml` tag (other than "-"), with untagged embedded structs flattened.
// It panics on a malformed schema tag (a programmer error in a config or
// plugin struct).
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var out []field
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			idx := append(append([]int(nil), index...), i)
			tag, tagged := sf.Tag.Lookup("toml")
			if sf.Anonymous && !tagged && sf.Type.Kind() == reflect.Struct {
				walk(sf.Type, idx)
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if !sf.IsExported() || !tagged || name == "-" || name == "" {
				continue
			}
			f := field{
				key: name, name: sf.Name, index: idx, typ: sf.Type,
				doc:      sf.Tag.Get("doc"),
				required: sf.Tag.Get("required") == "true",
				example:  sf.Tag.Get("example"),
				ns:       sf.Tag.Get("ns"),
				nohash:   sf.Tag.Get("hash") == "-",
				omitzero: sf.Tag.Get("hash") == "omitempty",
				omitdef:  sf.Tag.Get("hash") == "omitdefault",
				moved:    parseMovedTag(t, sf.Name, sf.Tag.Get("moved")),
				docmods:  sf.Tag.Get("docmodules"),
			}
			if m := sf.Tag.Get("modules"); m != "" {
				ns, alias, _ := strings.Cut(m, "+")
				f.modules = ns
				if alias != "" {
					f.aliases = strings.Split(alias, "+")
				}
			}
			if a := sf.Tag.Get("alias"); a != "" {
				f.valueAliases = parseAliasTag(a)
			}
			if e := sf.Tag.Get("enum"); e != "" {
				f.enum = strings.Split(e, ",")
			}
			if r := sf.Tag.Get("range"); r != "" {
				iv, err := parseInterval(r)
				if err != nil {
					panic(fmt.Sprintf("config: %s.%s: %v", t, sf.Name, err))
				}
				f.rng = &iv
			}
			if s := sf.Tag.Get("special"); s != "" {
				v, meaning, _ := strings.Cut(s, ":")
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					panic(fmt.Sprintf("config: %s.%s: bad special tag %q", t, sf.Name, s))
				}
				f.special = &special{value: x, text: v, meaning: meaning}
			}
			if w := sf.Tag.Get("word"); w != "" {
				text, rest, _ := strings.Cut(w, ":")
				v, meaning, _ := strings.Cut(rest, ":")
				x, err := strconv.ParseInt(v, 10, 64)
				if err != nil || text == "" {
					panic(fmt.Sprintf("config: %s.%s: bad word tag %q", t, sf.Name, w))
				}
				f.word = &word{text: text, value: x, meaning: meaning}
			}
			out = append(out, f)
		}
	}
	walk(t, nil)
	fieldCache.Store(t, out)
	return out
}

// unsetOutOfRange reports whether v, the value of f, is a number outside
// f's range that no special value or word allows: a key left out whose
// zero cannot be written (hybrid.host.cores, range [1, ...]). Dumps and
// config explain leave it out, so that they read back as written.
func (f *field) unsetOutOfRange(v reflect.Value) bool {
	if f.rng == nil || f.word != nil {
		return false
	}
	var x float64
	switch {
	case v.CanInt():
		x = float64(v.Int())
	case v.CanUint():
		x = float64(v.Uint())
	case v.CanFloat():
		x = v.Float()
	default:
		return false
	}
	return !f.rng.contains(x) && (f.special == nil || x != f.special.value)
}

// keysOf returns the keys of a field list.
func keysOf(fs []field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.key
	}
	return out
}

// interval is a numeric range from a `range` tag.
type interval struct {
	lo, hi         float64
	hasLo, hasHi   bool
	loOpen, hiOpen bool
	loText, hiText string
}

// parseInterval parses "[lo,hi)", "(lo,]", "[1,)" and the like.
func parseInterval(s string) (interval, error) {
	var iv interval
	if len(s) < 3 || !strings.ContainsRune("[(", rune(s[0])) || !strings.ContainsRune("])", rune(s[len(s)-1])) {
		return iv, fmt.Errorf("bad range tag %q", s)
	}
	lo, hi, ok := strings.Cut(s[1:len(s)-1], ",")
	if !ok {
		return iv, fmt.Errorf("bad range tag %q", s)
	}
	iv.loOpen, iv.hiOpen = s[0] == '(', s[len(s)-1] == ')'
	var err error
	if lo = strings.TrimSpace(lo); lo != "" {
		if iv.lo, err = strconv.ParseFloat(lo, 64); err != nil {
			return iv, fmt.Errorf("bad range tag %q", s)
		}
		iv.hasLo, iv.loText = true, lo
	}
	if hi = strings.TrimSpace(hi); hi != "" {
		if iv.hi, err = strconv.ParseFloat(hi, 64); err != nil {
			return iv, fmt.Errorf("bad range tag %q", s)
		}
		iv.hasHi, iv.hiText = true, hi
	}
	return iv, nil
}

// contains reports whether x lies in the interval (NaN never does).
func (iv interval) contains(x float64) bool {
	if x != x {
		return false
	}
	if iv.hasLo && (x < iv.lo || iv.loOpen && x == iv.lo) {
		return false
	}
	if iv.hasHi && (x > iv.hi || iv.hiOpen && x == iv.hi) {
		return false
	}
	return true
}

// String describes the interval: ">= 1", "> 0", "in [0, 1)".
func (iv interval) String() string {
	switch {
	case iv.hasLo && iv.hasHi:
		l, r := "[", "]"
		if iv.loOpen {
			l = "("
		}
		if iv.hiOpen {
			r = ")"
		}
		return fmt.Sprintf("in %s%s, %s%s", l, iv.loText, iv.hiText, r)
	case iv.hasLo && iv.loOpen:
		return "> " + iv.loText
	case iv.hasLo:
		return ">= " + iv.loText
	case iv.hasHi && iv.hiOpen:
		return "< " + iv.hiText
	case iv.hasHi:
		return "<= " + iv.hiText
	}
	return "any value"
}

// typeName names the TOML type a Go type decodes from.
func typeName(t reflect.Type) string {
	switch {
	case t == pluginType:
		return "table"
	case t == anyMapType:
		return "table of integers, floats and booleans"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Slice, reflect.Array:
		return "array of " + plural(typeName(t.Elem()))
	case reflect.Struct, reflect.Map:
		return "table"
	case reflect.Interface:
		return "value"
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return t.String()
}

func plural(s string) string {
	if strings.HasSuffix(s, "s") || strings.HasPrefix(s, "array") || strings.HasPrefix(s, "table of") {
		return s
	}
	return s + "s"
}

// constraint describes a field's allowed values for messages and explain:
// `one of "adam", "sgd"`, "integer >= 1", "float in [0, 1) or -1 (same as
// model.dropout)".
func (f *field) constraint() string {
	if allowed := f.allowed(); len(allowed) > 0 {
		return "one of " + quoteList(allowed)
	}
	s := typeName(f.typ)
	if f.rng != nil {
		s += " " + f.rng.String()
	}
	if f.word != nil {
		s += fmt.Sprintf(" or %q (%s)", f.word.text, f.word.meaning)
	}
	if f.special != nil {
		s += " " + f.special.describe()
	}
	return s
}

// quoteList formats names as `"a", "b"`.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// allowed returns the values a string field takes: its enum, or the names
// of the modules registered in its namespace (plus its aliases). A modules
// field of an empty namespace (a program that links no such module) takes
// any value; the registry lookup at run time then names what is missing.
func (f *field) allowed() []string {
	if f.modules == "" {
		return f.enum
	}
	var out []string
	for _, m := range registry.Namespace(f.modules) {
		out = append(out, m.Name())
	}
	if len(out) == 0 {
		return nil
	}
	for _, a := range f.aliases {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}
