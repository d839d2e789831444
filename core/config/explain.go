package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"strata/core/registry"
)

// Explain returns the whole config schema as an annotated TOML file: every
// section and key with its type, allowed values, default and a line of
// documentation, and for the plugin sections the registered plugins with
// their options and defaults. The uncommented part is a valid config that
// holds the defaults (with an example dataset).
func Explain() string {
	var b strings.Builder
	b.WriteString(`# strata config schema ("strata config explain").
#
# Every key is optional except data.dataset; the values shown are the
# defaults. Unknown keys, wrong types and values outside the allowed ones
# are errors. Relative paths are relative to the config file's directory.
# Any key can be overridden on the command line: --set train.epochs=5.
`)
	for _, sec := range fieldsOf(configType) {
		if sec.key == "output" {
			explainStrategies(&b)
		}
		explainSection(&b, sec)
	}
	return b.String()
}

// explainSection writes one section of Config (sec) with its keys, or,
// for a plugin section, the registered plugins and their options.
func explainSection(b *strings.Builder, sec field) {
	fmt.Fprintf(b, "\n[%s]\n", sec.key)
	writeComment(b, "", sec.doc)
	if sec.typ == pluginType {
		explainPlugin(b, sec)
		return
	}
	def := reflect.ValueOf(Default()).Elem()
	explainFields(b, "", def.FieldByIndex(sec.index), fieldsOf(sec.typ), sec.key)
}

// explainFields writes one key per field: a comment with its constraint
// and doc, then `key = default`; a struct field follows as its own table,
// [section.key].
func explainFields(b *strings.Builder, indent string, v reflect.Value, fields []field, section string) {
	var tables []field
	for _, f := range fields {
		if isTable(f.typ) || f.typ == pluginType {
			tables = append(tables, f)
			continue
		}
		b.WriteString("\n")
		doc := f.constraint()
		if f.required {
			doc += ", required"
		}
		if f.doc != "" {
			doc += ". " + f.doc
		}
		doc += moduleDocs(f.docmods)
		if ns := namesModules(section, f); ns != "" && f.modules == "" {
			if names := pluginNames(ns); len(names) > 0 {
				doc += "; registered: " + strings.Join(names, ", ")
			}
		}
		writeComment(b, indent, doc)
		fv := v.FieldByIndex(f.index)
		switch {
		case f.typ == anyMapType:
			fmt.Fprintf(b, "%s# [%s.%s]   (empty by default)\n", indent, section, f.key)
		case f.required && f.example != "" && fv.IsZero():
			fmt.Fprintf(b, "%s%s = %s\n", indent, f.key, strconv.Quote(f.example))
		case f.unsetOutOfRange(fv):
			fmt.Fprintf(b, "%s# %s =   (left out by default)\n", indent, f.key)
		case f.special != nil && fv.CanFloat() && fv.Float() == f.special.value:
			if _, unset := f.special.unset(); unset {
				fmt.Fprintf(b, "%s# %s =   (left out by default)\n", indent, f.key)
				break
			}
			fmt.Fprintf(b, "%s%s = %s\n", indent, f.key, goValue(fv))
		default:
			fmt.Fprintf(b, "%s%s = %s\n", indent, f.key, goValue(fv))
		}
	}
	for _, f := range tables {
		fmt.Fprintf(b, "\n%s[%s.%s]\n", indent, section, f.key)
		writeComment(b, indent, f.doc)
		if f.typ == pluginType {
			explainPlugin(b, f)
			continue
		}
		explainFields(b, indent, v.FieldByIndex(f.index), fieldsOf(f.typ), section+"."+f.key)
	}
}

// moduleDocs lists the registered modules of ns with their doc lines,
// for a key whose values they read (data.dataset: the formats), or "".
func moduleDocs(ns string) string {
	if ns == "" {
		return ""
	}
	var parts []string
	for _, m := range registry.Namespace(ns) {
		parts = append(parts, fmt.Sprintf("%q (%s.%s): %s", m.Name(), ns, m.Name(), m.Doc))
	}
	return fmt.Sprintf(". Registered %s modules: %s", ns, strings.Join(parts, "; "))
}

// explainPlugin lists the registered plugins of a plugin section.
func explainPlugin(b *strings.Builder, sec field) {
	mods := registry.Namespace(sec.ns)
	b.WriteString("#\n")
	if len(mods) == 0 {
		writeComment(b, "", fmt.Sprintf("name: string, a %s plugin; none are registered in this build. Absent = none.", sec.ns))
		return
	}
	writeComment(b, "", fmt.Sprintf("name: string, one of %s (registry IDs %s.<name>); absent = none. "+
		"The section's other keys are the chosen plugin's options:", quoteList(pluginNames(sec.ns)), sec.ns))
	for _, m := range mods {
		fmt.Fprintf(b, "#\n#   name = %q\n", m.Name())
		writeComment(b, "#     ", m.Doc)
		fields, target := moduleFields(m.New())
		if len(fields) == 0 {
			b.WriteString("#     (no options)\n")
			continue
		}
		for _, o := range optionsOf("", target, fields) {
			fmt.Fprintf(b, "%-30s # %s\n", fmt.Sprintf("#     %s = %s", o.key, o.value), o.doc)
		}
	}
}

// writeComment writes text as comment lines of at most ~76 columns.
func writeComment(b *strings.Builder, indent, text string) {
	if text == "" {
		return
	}
	line := indent + "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 76 && len(line) > len(indent)+1 {
			b.WriteString(line + "\n")
			line = indent + "#"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}

// goValue formats a Go config value as a TOML value.
func goValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return formatValue(v.Float())
	case reflect.Slice, reflect.Array:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = goValue(v.Index(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k.String()) + " = " + goValue(v.MapIndex(k))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case reflect.Interface:
		if !v.IsNil() {
			return goValue(v.Elem())
		}
	}
	return fmt.Sprintf("%v", v.Interface())
}

// PluginOptions describes the options of a module for `strata
// list-plugins`: one "key = default  # constraint. doc" line per option,
// the keys of a table option dotted ("store.graph_ratio").
func PluginOptions(m registry.Module) []string {
	fields, target := moduleFields(m)
	var out []string
	for _, o := range optionsOf("", target, fields) {
		out = append(out, fmt.Sprintf("%s = %s  # %s", o.key, o.value, o.doc))
	}
	return out
}

// option is one key of a module's options as list-plugins and explain
// show it.
type option struct{ key, value, doc string }

// optionsOf lists the options of the fields of v, their keys after
// prefix, a table option's keys dotted.
func optionsOf(prefix string, v reflect.Value, fields []field) []option {
	var out []option
	for _, f := range fields {
		fv := v.FieldByIndex(f.index)
		if isTable(f.typ) {
			out = append(out, optionsOf(prefix+f.key+".", fv, fieldsOf(f.typ))...)
			continue
		}
		doc := f.constraint()
		if f.doc != "" {
			doc += ". " + f.doc
		}
		val := goValue(fv)
		if f.unsetOutOfRange(fv) {
			val = "(left out)"
		}
		if f.special != nil && fv.CanFloat() && fv.Float() == f.special.value {
			if _, unset := f.special.unset(); unset {
				val = "(left out)"
			}
		}
		out = append(out, option{prefix + f.key, val, doc})
	}
	return out
}
