package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"strata/core/registry"
)

// namesModules returns the registry namespace whose module names the key
// f of section takes (its modules tag; model.name, whose names the
// decoder checks itself, takes the model modules), or "".
func namesModules(section string, f field) string {
	if f.modules != "" {
		return f.modules
	}
	if section == "model" && f.key == "name" {
		return "model"
	}
	return ""
}

// ExplainTopic returns the part of Explain about topic: a section
// ("train", "sampler", a strategy's "minibatch"), a key ("train.lr",
// "sampler.fanouts": that option of every sampler that has it, a moved
// key at its new place) or a module ID ("sampler.uniform": its doc, how
// a config selects it and its options). An unknown topic is an error
// suggesting the closest one.
func ExplainTopic(topic string) (string, error) {
	var b strings.Builder
	path := strings.Split(topic, ".")
	if _, err := registry.Lookup(topic); err == nil {
		explainModule(&b, topic)
		return b.String(), nil
	}
	found := false
	for _, k := range movedKeys() {
		if len(path) >= len(k.from) && slices.Equal(k.from, path[:len(k.from)]) {
			to := append(k.newPath(), path[len(k.from):]...)
			fmt.Fprintf(&b, "%s# %s moved to %s (the old key is still read)\n", sep(found), topic, toml.Key(to))
			found = explainPath(&b, to) || found
		}
	}
	if found || explainPath(&b, path) {
		return b.String(), nil
	}
	var known []string
	for _, k := range Keys() {
		known = append(known, k.Name)
	}
	known = append(append(known, Sections()...), moduleIDs()...)
	msg := fmt.Sprintf("config explain: %q is no config key, section or module ID", topic)
	if sug := registry.Suggest(topic, known); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return "", fmt.Errorf("%s; the sections are %s; keys: strata config explain SECTION; module IDs: strata list-plugins", msg, quoteList(Sections()))
}

// sep returns the blank line that separates a second part of an answer.
func sep(more bool) string {
	if more {
		return "\n"
	}
	return ""
}

// explainPath writes the section or key path names; false when none.
func explainPath(b *strings.Builder, path []string) bool {
	if len(path) == 0 {
		return false
	}
	if m, ok := strategySections()[path[0]]; ok {
		if len(path) == 1 {
			explainStrategy(b, m)
			return true
		}
		fields, target := moduleFields(m.New())
		return explainLeaf(b, target, fields, path[0], path[1:])
	}
	i := slices.IndexFunc(fieldsOf(configType), func(f field) bool { return f.key == path[0] })
	if i < 0 {
		return false
	}
	sec := fieldsOf(configType)[i]
	switch {
	case len(path) == 1:
		explainSection(b, sec)
		return true
	case sec.typ == pluginType:
		return explainPluginKey(b, sec, path[1:])
	}
	def := reflect.ValueOf(Default()).Elem().FieldByIndex(sec.index)
	return explainLeaf(b, def, fieldsOf(sec.typ), sec.key, path[1:])
}

// explainLeaf writes the key rest of a table (v, its fields) at section.
func explainLeaf(b *strings.Builder, v reflect.Value, fields []field, section string, rest []string) bool {
	i := slices.IndexFunc(fields, func(f field) bool { return f.key == rest[0] })
	if i < 0 {
		return false
	}
	f := fields[i]
	if len(rest) > 1 {
		if !isTable(f.typ) {
			return false
		}
		return explainLeaf(b, v.FieldByIndex(f.index), fieldsOf(f.typ), section+"."+f.key, rest[1:])
	}
	if !isTable(f.typ) {
		fmt.Fprintf(b, "[%s]\n", section)
	}
	explainFields(b, "", v, []field{f}, section)
	return true
}

// explainPluginKey writes the key rest of plugin section sec: name, or
// the option of every module of the namespace that has it.
func explainPluginKey(b *strings.Builder, sec field, rest []string) bool {
	key := strings.Join(rest, ".")
	if key == "name" {
		fmt.Fprintf(b, "[%s]\n", sec.key)
		explainPlugin(b, sec)
		return true
	}
	found := false
	for _, m := range registry.Namespace(sec.ns) {
		fields, target := moduleFields(m.New())
		for _, o := range optionsOf("", target, fields) {
			if o.key != key {
				continue
			}
			if !found {
				fmt.Fprintf(b, "[%s]\n", sec.key)
			}
			fmt.Fprintf(b, "%s# with name = %q (%s):\n", sep(found), m.Name(), m.ID)
			writeComment(b, "", o.doc)
			fmt.Fprintf(b, "# %s = %s\n", o.key, o.value)
			found = true
		}
	}
	return found
}

// explainModule writes module id's doc, the key that selects it and its
// options as a config section.
func explainModule(b *strings.Builder, id string) {
	info, _ := registry.Lookup(id)
	ns := info.Namespace()
	writeComment(b, "", fmt.Sprintf("%s: %s", id, info.Doc))
	fields, target := moduleFields(info.New())
	section, named := "", false // the section of its options; whether name = selects it there
	if ns == strategyNamespace {
		fmt.Fprintf(b, "# selected by train.mode = %q\n", info.Name())
		section = info.Name()
	}
	for _, sec := range fieldsOf(configType) {
		if sec.typ == pluginType && sec.ns == ns {
			section, named = sec.key, true
		}
	}
	for _, k := range selectors(ns) {
		fmt.Fprintf(b, "# selected by %s = %q\n", k, info.Name())
	}
	for _, k := range namedIn(ns) {
		fmt.Fprintf(b, "# named in %s (see strata config explain %s)\n", k, k)
	}
	switch {
	case len(fields) == 0 && section != "":
		b.WriteString("# (no options)\n")
	case len(fields) > 0:
		fmt.Fprintf(b, "\n[%s]\n", section)
		if named {
			fmt.Fprintf(b, "name = %q\n", info.Name())
		}
		explainFields(b, "", target, fields, section)
	}
}

// selectors returns the keys whose value names a module of ns: a plugin
// section's name, a key that takes the namespace's names.
func selectors(ns string) []string {
	var out []string
	for _, sec := range fieldsOf(configType) {
		if sec.typ == pluginType {
			if sec.ns == ns {
				out = append(out, sec.key+".name")
			}
			continue
		}
		if sec.typ.Kind() != reflect.Struct {
			continue
		}
		for _, f := range fieldsOf(sec.typ) {
			if namesModules(sec.key, f) == ns {
				out = append(out, sec.key+"."+f.key)
			}
		}
	}
	return out
}

// namedIn returns the keys whose doc lists the modules of ns (docmodules
// tag): keys whose values name them among other things.
func namedIn(ns string) []string {
	var out []string
	for _, sec := range fieldsOf(configType) {
		if isTable(sec.typ) {
			for _, f := range fieldsOf(sec.typ) {
				if f.docmods == ns {
					out = append(out, sec.key+"."+f.key)
				}
			}
		}
	}
	return out
}

// moduleIDs lists the registered module IDs.
func moduleIDs() []string {
	var out []string
	for _, ns := range registry.Namespaces() {
		for _, m := range registry.Namespace(ns) {
			out = append(out, m.ID)
		}
	}
	return out
}

// Key is one key --set takes, for shell completion: its dotted name and
// the values it takes when they are a fixed set (an enum, module names,
// true/false), else nil.
type Key struct {
	Name   string
	Values []string
}

// Keys lists every key --set takes, sorted: the keys of Config's
// sections, each plugin section's name and the options of every module of
// its namespace, each strategy section's options, and the old places of
// moved keys. model.options' keys are the chosen layer module's, which
// core does not run: the caller adds them.
func Keys() []Key {
	vals := map[string][]string{}
	add := func(name string, values []string) {
		old, seen := vals[name]
		if !seen || values != nil {
			vals[name] = slices.Compact(slices.Sorted(slices.Values(append(old, values...))))
		}
	}
	var walk func(prefix, section string, fields []field)
	walk = func(prefix, section string, fields []field) {
		for _, f := range fields {
			switch {
			case isTable(f.typ):
				walk(prefix+f.key+".", section+"."+f.key, fieldsOf(f.typ))
			case f.typ != anyMapType:
				add(prefix+f.key, valuesOf(section, f))
			}
		}
	}
	for _, sec := range fieldsOf(configType) {
		if sec.typ != pluginType {
			walk(sec.key+".", sec.key, fieldsOf(sec.typ))
			continue
		}
		add(sec.key+".name", pluginNames(sec.ns))
		for _, m := range registry.Namespace(sec.ns) {
			fields, _ := moduleFields(m.New())
			walk(sec.key+".", sec.key, fields)
		}
	}
	secs := strategySections()
	for _, name := range slices.Sorted(maps.Keys(secs)) {
		fields, _ := moduleFields(secs[name].New())
		walk(name+".", name, fields)
	}
	for _, k := range movedKeys() {
		if from := toml.Key(k.from).String(); isTable(k.f.typ) {
			walk(from+".", k.section+"."+k.f.key, fieldsOf(k.f.typ))
		} else {
			add(from, valuesOf(k.section, k.f))
		}
	}
	out := make([]Key, 0, len(vals))
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		out = append(out, Key{name, vals[name]})
	}
	return out
}

// valuesOf returns the values key f of section takes when they are a
// fixed set, else nil.
func valuesOf(section string, f field) []string {
	if ns := namesModules(section, f); ns != "" {
		return pluginNames(ns)
	}
	if f.typ.Kind() == reflect.Bool {
		return []string{"false", "true"}
	}
	return slices.DeleteFunc(slices.Clone(f.enum), func(s string) bool { return s == "" })
}
