package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"strata/core/registry"
)

// pluginNames returns the names (without namespace) of the modules of ns.
func pluginNames(ns string) []string {
	var out []string
	for _, m := range registry.Namespace(ns) {
		out = append(out, m.Name())
	}
	return out
}

// available describes the registered plugins of ns for messages.
func available(ns string) string {
	names := pluginNames(ns)
	if len(names) == 0 {
		return fmt.Sprintf("no %s plugins are registered", ns)
	}
	return "available: " + quoteList(names)
}

// plugin decodes a plugin section: name picks the registry module, the
// other keys are decoded into the module's config struct.
func (d *decoder) plugin(path []string, v any, rv reflect.Value, ns string) {
	section := toml.Key(path).String()
	namePath := append(slices.Clone(path), "name")
	m, ok := v.(map[string]any)
	if !ok {
		d.errorf(path, "%s: expected table, got %s", section, DescribeValue(v))
		return
	}
	opts := make(map[string]any, len(m))
	for k, x := range m {
		if k != "name" {
			opts[k] = x
		}
	}
	raw, hasName := m["name"]
	if !hasName {
		if len(opts) > 0 {
			d.errorf(namePath, "%s.name: required key is missing: the section sets options but names no %s plugin (%s)", section, ns, available(ns))
		}
		return
	}
	name, ok := unwrap(raw, reflect.String).(string)
	if !ok {
		d.errorf(namePath, "%s.name: expected string, got %s", section, DescribeValue(raw))
		return
	}
	if name == "" {
		if len(opts) > 0 {
			d.errorf(namePath, "%s.name is empty but the section sets options; name a %s plugin (%s)", section, ns, available(ns))
		}
		return
	}
	id := ns + "." + name
	if pre, rest, dotted := strings.Cut(name, "."); dotted {
		if pre != ns {
			d.errorf(namePath, "%s.name = %q: not a %s plugin (%s)", section, name, ns, available(ns))
			return
		}
		id, name = name, rest
	}
	info, err := registry.Lookup(id)
	if err != nil {
		msg := fmt.Sprintf("%s.name = %q: unknown %s plugin", section, name, ns)
		if sug, ok := moduleAliasSuggestion(ns, name); ok {
			msg += " (" + sug + ")"
		} else if sug := registry.Suggest(name, pluginNames(ns)); sug != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		d.errs = append(d.errs, d.src.errorAt(namePath, msg+"; "+available(ns)))
		return
	}
	inst := d.moduleOptions(path, section, ns, info, opts)
	o, _ := plain(opts).(map[string]any)
	rv.Set(reflect.ValueOf(Plugin{Name: info.Name(), ID: info.ID, Options: o, Module: inst}))
}

// moduleOptions decodes the options of a module section (opts, the
// section's keys other than what picked the module) into a new instance
// of the module, strictly, then validates it as the lifecycle does at
// decode time (registry.ValidateDecoded). A misspelt option is suggested
// and named "for <ns> <name>".
func (d *decoder) moduleOptions(path []string, section, ns string, info registry.ModuleInfo, opts map[string]any) registry.Module {
	inst := info.New()
	before := len(d.errs)
	fields, target := moduleFields(inst)
	unknown := func(kp []string, known []string) {
		key := toml.Key(kp).String()
		msg := fmt.Sprintf("unknown key %q for %s %q", key, ns, info.Name())
		if sug := registry.Suggest(kp[len(kp)-1], known); sug != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", toml.Key(append(slices.Clone(kp[:len(kp)-1]), sug)).String())
		}
		if len(known) == 0 {
			msg += fmt.Sprintf("; %s %q has no options", ns, info.Name())
		} else {
			msg += fmt.Sprintf("; its options are %s", quoteList(known))
		}
		d.errs = append(d.errs, d.src.errorAt(kp, msg))
	}
	if target.IsValid() {
		saved := d.unknown
		d.unknown = unknown
		d.table(path, opts, target, fields, unknown)
		d.unknown = saved
	} else {
		for _, k := range d.sortedKeys(path, opts) {
			unknown(append(slices.Clone(path), k), nil)
		}
	}
	if len(d.errs) == before {
		if err := registry.ValidateDecoded(inst); err != nil {
			d.errorf(path, "%s (%s): %v", section, info.ID, err)
		}
	}
	return inst
}

// moduleFields returns the config keys of a module instance and the struct
// value to decode them into (invalid when the module is not a pointer to a
// struct, i.e. has no options).
func moduleFields(inst registry.Module) ([]field, reflect.Value) {
	v := reflect.ValueOf(inst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, reflect.Value{}
	}
	return fieldsOf(v.Elem().Type()), v.Elem()
}
