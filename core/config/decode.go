package config

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"strata/core/registry"
)

// decoder decodes a generic TOML tree (as toml.Decode builds it into a
// map[string]any) into a struct, strictly: every key must be declared,
// every value must have the declared type and satisfy the field's enum and
// range tags. It collects every error instead of stopping at the first.
type decoder struct {
	src  *source
	errs []*Error
	// elem is the array index suffix ("[1]") of the value being decoded,
	// for messages.
	elem string
	// unknown reports undeclared keys of nested tables (the plugin's
	// handler inside a plugin section); nil means unknownKey.
	unknown unknownKeyFunc
	// entries are the arrays of tables whose entries are being decoded,
	// outermost first (see DecodeStrict).
	entries []entry
}

// name is the display name of the key path being decoded.
func (d *decoder) name(path []string) string { return toml.Key(path).String() + d.elem }

func (d *decoder) errorf(path []string, format string, args ...any) {
	d.errs = append(d.errs, d.errorAt(path, fmt.Sprintf(format, args...)))
}

// overrideValue is a value set with --set: the text as given and its
// meaning as a TOML value (the text itself when it does not parse as one).
// String keys take the text, so --set data.dataset=1e5 needs no quotes.
type overrideValue struct {
	raw    string
	parsed any
}

// unwrap returns the value of an override for a field of kind k.
func unwrap(v any, k reflect.Kind) any {
	ov, ok := v.(overrideValue)
	if !ok {
		return v
	}
	if _, isString := ov.parsed.(string); k == reflect.String && !isString {
		return ov.raw
	}
	return ov.parsed
}

// plain returns v with every override wrapper removed (their parsed form).
func plain(v any) any {
	switch x := v.(type) {
	case overrideValue:
		return plain(x.parsed)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// sortedKeys returns the keys of m in source order (then by name).
func (d *decoder) sortedKeys(path []string, m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	line := func(k string) int {
		p := d.src.pos[toml.Key(d.posPath(append(slices.Clone(path), k))).String()]
		if p.override != "" {
			return math.MaxInt
		}
		return p.line
	}
	slices.SortFunc(keys, func(a, b string) int {
		if la, lb := line(a), line(b); la != lb {
			if la < lb {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return keys
}

// unknownKeyFunc reports an undeclared key of a table.
type unknownKeyFunc func(path []string, known []string)

// table decodes the keys of m into the struct rv described by fields.
func (d *decoder) table(path []string, m map[string]any, rv reflect.Value, fields []field, unknown unknownKeyFunc) {
	byKey := make(map[string]*field, len(fields))
	for i := range fields {
		byKey[fields[i].key] = &fields[i]
	}
	d.setPos(path, m, rv)
	for _, k := range d.sortedKeys(path, m) {
		kp := append(slices.Clone(path), k)
		f, ok := byKey[k]
		if !ok {
			unknown(kp, keysOf(fields))
			continue
		}
		d.value(kp, m[k], rv.FieldByIndex(f.index), f)
	}
	for i := range fields {
		f := &fields[i]
		if _, ok := m[f.key]; ok {
			continue
		}
		kp := append(slices.Clone(path), f.key)
		if f.typ.Kind() == reflect.Struct && f.typ != pluginType && !isValueDecoder(f.typ) {
			// An absent section: check its required keys.
			d.table(kp, map[string]any{}, rv.FieldByIndex(f.index), fieldsOf(f.typ), unknown)
			continue
		}
		if f.required {
			hint := ""
			if f.example != "" {
				hint = fmt.Sprintf(": add %s = %s", f.key, f.exampleText())
				if len(path) > 0 {
					hint += " under " + d.tableName(path)
				}
			}
			d.errorf(kp, "%s: required key is missing%s", toml.Key(kp), hint)
		}
	}
}

// value decodes one TOML value into rv, checking the field's constraints.
func (d *decoder) value(path []string, v any, rv reflect.Value, f *field) {
	typ := rv.Type()
	v = unwrap(v, typ.Kind())
	name := d.name(path)
	if d.custom(path, v, rv) {
		return
	}
	switch {
	case typ == pluginType:
		d.plugin(path, v, rv, f.ns)
		return
	case typ == anyMapType:
		d.scalarMap(path, v, rv)
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			d.typeError(path, f, v)
			return
		}
		unknown := d.unknown
		if unknown == nil {
			unknown = d.unknownKey
		}
		d.table(path, m, rv, fieldsOf(typ), unknown)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			d.typeError(path, f, v)
			return
		}
		if f.required && s == "" {
			d.errorf(path, "%s must not be empty", name)
			return
		}
		if allowed := f.allowed(); len(allowed) > 0 && !slices.Contains(allowed, s) {
			if hint := registry.Unavailable(f.modules + "." + s); f.modules != "" && hint != "" {
				d.errorf(path, "%s = %q: not in this build: %s", d.name(path), s, hint)
				return
			}
			d.enumError(path, f, s)
			return
		}
		rv.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.typeError(path, f, v)
			return
		}
		rv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if s, isString := v.(string); isString && f.word != nil {
			d.word(path, f, s, rv)
			return
		}
		n, ok := v.(int64)
		if !ok {
			d.typeError(path, f, v)
			return
		}
		if rv.OverflowInt(n) {
			d.errorf(path, "%s = %d: does not fit in %s", name, n, typ.Kind())
			return
		}
		if !d.inRange(path, f, float64(n), strconv.FormatInt(n, 10)) {
			return
		}
		rv.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(int64)
		if !ok {
			d.typeError(path, f, v)
			return
		}
		if n < 0 || rv.OverflowUint(uint64(n)) {
			d.errorf(path, "%s = %d: must be a non-negative integer that fits in %s", name, n, typ.Kind())
			return
		}
		if !d.inRange(path, f, float64(n), strconv.FormatInt(n, 10)) {
			return
		}
		rv.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		var x float64
		switch n := v.(type) {
		case float64:
			x = n
		case int64:
			x = float64(n)
		case string:
			if f.word != nil {
				d.word(path, f, n, rv)
				return
			}
			d.typeError(path, f, v)
			return
		default:
			d.typeError(path, f, v)
			return
		}
		if !d.inRange(path, f, x, formatValue(v)) {
			return
		}
		rv.SetFloat(x)
	case reflect.Slice:
		arr, ok := v.([]any)
		if tables, isTables := v.([]map[string]any); isTables { // [[name]]
			arr, ok = make([]any, len(tables)), true
			for i, t := range tables {
				arr[i] = t
			}
		}
		if !ok {
			d.typeError(path, f, v)
			return
		}
		if len(arr) == 0 {
			rv.Set(reflect.Zero(typ)) // an empty list is the same as none
			return
		}
		out := reflect.MakeSlice(typ, len(arr), len(arr))
		elem := &field{key: f.key, typ: typ.Elem(), enum: f.enum, rng: f.rng, special: f.special}
		if isTable(typ.Elem()) {
			d.tables(path, arr, out, elem)
			rv.Set(out)
			return
		}
		before := len(d.errs)
		saved := d.elem
		for i, e := range arr {
			d.elem = saved + "[" + strconv.Itoa(i) + "]"
			d.value(path, e, out.Index(i), elem)
		}
		d.elem = saved
		if len(d.errs) == before {
			rv.Set(out)
		}
	case reflect.Interface:
		d.anyValue(path, v, rv)
	case reflect.Map:
		d.mapValue(path, v, rv, f)
	default:
		// A plugin struct with a field type the loader cannot fill.
		d.errorf(path, "%s: cannot be set from a config (Go type %s)", name, typ)
	}
}

// inRange checks a number against the field's range and special value.
func (d *decoder) inRange(path []string, f *field, x float64, text string) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		d.errorf(path, "%s = %s: must be a finite number", d.name(path), text)
		return false
	}
	if f.rng == nil || f.rng.contains(x) || f.special != nil && x == f.special.value {
		return true
	}
	msg := "must be " + f.rng.String()
	if f.word != nil {
		msg += fmt.Sprintf(" or %q (%s)", f.word.text, f.word.meaning)
	}
	if f.special != nil {
		msg += " " + f.special.describe()
	}
	d.errorf(path, "%s = %s: %s", d.name(path), text, msg)
	return false
}

func (d *decoder) typeError(path []string, f *field, v any) {
	want := typeName(f.typ)
	if f.word != nil {
		want += fmt.Sprintf(" or %q", f.word.text)
	}
	if f.typ.Kind() == reflect.Slice && isTable(f.typ.Elem()) && d.elem == "" {
		want += " ([[" + f.key + "]])"
	}
	eg := ""
	if f.example != "" && f.typ.Kind() != reflect.String && d.elem == "" {
		// An example of a table or array value (a string key's example
		// is for a missing key).
		eg = fmt.Sprintf("; e.g. %s = %s", f.key, f.example)
	}
	d.errorf(path, "%s: expected %s, got %s%s", d.name(path), want, DescribeValue(v), eg)
}

// word sets an integer key given as a string: its word ("auto"), or an
// error naming the key and the values it takes.
func (d *decoder) word(path []string, f *field, s string, rv reflect.Value) {
	number := "an integer"
	if rv.CanFloat() {
		number = "a number"
	}
	if s == f.word.text {
		if rv.CanFloat() {
			rv.SetFloat(float64(f.word.value))
		} else {
			rv.SetInt(f.word.value)
		}
		return
	}
	name := d.name(path)
	msg := fmt.Sprintf("%s = %q: the only string %s takes is %q (%s); otherwise give %s", name, s, name, f.word.text, f.word.meaning, number)
	if f.rng != nil {
		msg += " " + f.rng.String()
	}
	if sug := registry.Suggest(s, []string{f.word.text}); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	d.errs = append(d.errs, d.errorAt(path, msg))
}

func (d *decoder) enumError(path []string, f *field, s string) {
	name := d.name(path)
	allowed := f.allowed()
	msg := fmt.Sprintf("%s = %q: allowed values are %s", name, s, quoteList(allowed))
	if sug, ok := aliasSuggestion(f, s); ok {
		msg += " (" + sug + ")"
	} else if sug := registry.Suggest(s, allowed); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	d.errs = append(d.errs, d.errorAt(path, msg))
}

// unknownKey reports an undeclared key of a config section, suggesting the
// closest key of the same table or the same key in another section.
func (d *decoder) unknownKey(path []string, known []string) {
	name := toml.Key(path).String()
	last := path[len(path)-1]
	parent := path[:len(path)-1]
	if sug := registry.Suggest(last, known); sug != "" {
		d.errorf(path, "unknown key %q (did you mean %q?)", name, toml.Key(append(slices.Clone(parent), sug)).String())
		return
	}
	if other := findKey(last, parent); other != "" {
		d.errorf(path, "unknown key %q (did you mean %q?)", name, other)
		return
	}
	where := "the top level"
	if len(parent) > 0 {
		where = "[" + toml.Key(parent).String() + "]"
	}
	d.errorf(path, "unknown key %q; the keys of %s are %s", name, where, quoteList(known))
}

// findKey returns the full path of a config key named leaf outside the
// table parent, or "".
func findKey(leaf string, parent []string) string {
	here := toml.Key(parent).String()
	for _, sec := range fieldsOf(configType) {
		if sec.typ.Kind() != reflect.Struct || sec.typ == pluginType || sec.key == here {
			continue
		}
		for _, f := range fieldsOf(sec.typ) {
			if f.key == leaf {
				return sec.key + "." + f.key
			}
		}
	}
	sections := strategySections()
	for _, name := range slices.Sorted(maps.Keys(sections)) {
		fields, _ := moduleFields(sections[name].New())
		for _, f := range fields {
			if f.key == leaf && name != here {
				return name + "." + f.key
			}
		}
	}
	return ""
}

// scalarMap decodes a table of integers, floats, booleans and strings
// (model.options).
func (d *decoder) scalarMap(path []string, v any, rv reflect.Value) {
	m, ok := v.(map[string]any)
	if !ok {
		d.errorf(path, "%s: expected table, got %s", toml.Key(path), DescribeValue(v))
		return
	}
	out := make(map[string]any, len(m))
	for _, k := range d.sortedKeys(path, m) {
		kp := append(slices.Clone(path), k)
		switch x := unwrap(m[k], reflect.Invalid).(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				d.errorf(kp, "%s = %v: must be a finite number", toml.Key(kp), x)
				continue
			}
			out[k] = x
		case int64, bool, string:
			out[k] = x
		default:
			d.errorf(kp, "%s: expected integer, float, boolean or string, got %s", toml.Key(kp), DescribeValue(x))
		}
	}
	rv.Set(reflect.ValueOf(out))
}

// DescribeValue names a TOML value's type and shows it: `string "200"`,
// `float 0.5`, `table`.
func DescribeValue(v any) string {
	switch x := v.(type) {
	case string:
		return "string " + strconv.Quote(x)
	case int64:
		return "integer " + strconv.FormatInt(x, 10)
	case float64:
		return "float " + formatValue(x)
	case bool:
		return "boolean " + strconv.FormatBool(x)
	case map[string]any:
		return "table"
	case []map[string]any:
		return "array of tables"
	case []any:
		return "array " + formatValue(x)
	case time.Time:
		return fmt.Sprintf("datetime %v", x)
	case overrideValue:
		return DescribeValue(x.parsed)
	}
	return fmt.Sprintf("%T", v)
}

// formatValue formats a value as TOML would write it, shortening long
// arrays for messages.
func formatValue(v any) string {
	s := TOMLValue(v)
	if _, isArray := v.([]any); isArray && len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
