package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"strata/core/registry"
)

// A strategy's section. A training strategy (a module of the registry
// namespace "strategy") that has options decodes them from a top-level
// section named after it, as a sampler decodes [sampler]: `[chunked]` for
// strategy.chunked. Core declares none of these sections; they are
// discovered from the registry. The strategy that train.mode names is
// decoded from its section (or from its defaults when the section is
// absent) into Config.Strategy; the section of any other strategy is an
// error unless it only repeats that strategy's defaults (a config written
// out by TOML before the mode changed).

// strategyNamespace is the registry namespace of the training strategies.
const strategyNamespace = "strategy"

// strategySections returns the registered strategies that have options,
// by section name (the module's name).
func strategySections() map[string]registry.ModuleInfo {
	out := map[string]registry.ModuleInfo{}
	for _, m := range registry.Namespace(strategyNamespace) {
		if fields, _ := moduleFields(m.New()); len(fields) > 0 {
			out[m.Name()] = m
		}
	}
	return out
}

// takeStrategySections removes the top-level keys of raw that name a
// strategy section (and are not keys of Config) and returns them.
func takeStrategySections(raw map[string]any) map[string]any {
	builtin := map[string]bool{}
	for _, f := range fieldsOf(configType) {
		builtin[f.key] = true
	}
	out := map[string]any{}
	for name := range strategySections() {
		if v, ok := raw[name]; ok && !builtin[name] {
			out[name] = v
			delete(raw, name)
		}
	}
	return out
}

// strategy decodes the section of the strategy train.mode names into
// c.Strategy and checks that no other strategy's section is set; moved
// are the keys moveKeys took from their old places, by section.
func (d *decoder) strategy(c *Config, sections map[string]any, moved map[string][]movedKey) {
	mode := c.Train.Mode
	info, err := registry.Lookup(strategyNamespace + "." + mode)
	if err == nil {
		inst := d.strategySection(info, sections[mode])
		c.Strategy = Plugin{Name: info.Name(), ID: info.ID, Module: inst}
		if v, ok := sections[mode].(map[string]any); ok {
			c.Strategy.Options, _ = plain(v).(map[string]any)
		}
	}
	known := strategySections()
	for _, name := range slices.Sorted(maps.Keys(sections)) {
		if name == mode {
			continue
		}
		other := known[name]
		before := len(d.errs)
		inst := d.strategySection(other, sections[name])
		def := other.New()
		if len(d.errs) > before || reflect.DeepEqual(inst, def) {
			continue
		}
		if d.otherMoved(inst, def, moved[name], mode) {
			continue
		}
		d.errorf([]string{name}, "%s: the section configures train.mode = %q, not %q; set train.mode = %q or remove [%s]", name, name, mode, name, name)
	}
}

// otherMoved reports the keys of moved (at their old places) that set
// inst, another strategy than train.mode's, away from its defaults def;
// it returns true when those are all that differ.
func (d *decoder) otherMoved(inst, def registry.Module, moved []movedKey, mode string) bool {
	_, target := moduleFields(inst)
	_, defTarget := moduleFields(def)
	for _, k := range moved {
		if !reflect.DeepEqual(target.FieldByIndex(k.f.index).Interface(), defTarget.FieldByIndex(k.f.index).Interface()) {
			d.movedError(k, mode)
		}
	}
	taken := func(f field) bool {
		return slices.ContainsFunc(moved, func(k movedKey) bool { return slices.Equal(k.f.index, f.index) })
	}
	return reflect.DeepEqual(withoutMoved(inst, def, taken), def)
}

// strategySection decodes one strategy's section (v, nil when absent)
// into a new instance of the module, as a plugin section is decoded.
func (d *decoder) strategySection(info registry.ModuleInfo, v any) registry.Module {
	if v == nil {
		return info.New()
	}
	path := []string{info.Name()}
	m, ok := unwrap(v, reflect.Map).(map[string]any)
	if !ok {
		d.errorf(path, "%s: expected table, got %s", info.Name(), DescribeValue(v))
		return info.New()
	}
	return d.moduleOptions(path, info.Name(), strategyNamespace, info, m)
}

// strategyMap is the strategy's section as a TOML tree for Canonical and
// TOML, or nil when it has no options or (hashOnly) they are all at their
// defaults: a section at its defaults does not change the results, and
// configs written before the strategy had options keep their hash.
func (c *Config) strategyMap(hashOnly bool) (string, map[string]any) {
	m := c.Strategy.Module
	if m == nil {
		return "", nil
	}
	fields, target := moduleFields(m)
	if len(fields) == 0 {
		return "", nil
	}
	if hashOnly {
		// Moved options hash at their old places (placeMovedKeys).
		fields = slices.DeleteFunc(slices.Clone(fields), isMoved)
		if info, err := registry.Lookup(c.Strategy.ID); err == nil && reflect.DeepEqual(withoutMoved(m, info.New(), isMoved), info.New()) {
			return "", nil
		}
	}
	return c.Strategy.Name, structMap(target, fields, hashOnly)
}

// explainStrategies writes a section per strategy with options, with its
// defaults uncommented (a section at its defaults is a valid config under
// any train.mode).
func explainStrategies(b *strings.Builder) {
	for _, m := range registry.Namespace(strategyNamespace) {
		explainStrategy(b, m)
	}
}

// explainStrategy writes the section of strategy m's options (nothing
// when it has none).
func explainStrategy(b *strings.Builder, m registry.ModuleInfo) {
	fields, target := moduleFields(m.New())
	if len(fields) == 0 {
		return
	}
	fmt.Fprintf(b, "\n[%s]\n", m.Name())
	writeComment(b, "", fmt.Sprintf("options of train.mode = %s (%s): %s", strconv.Quote(m.Name()), m.ID, m.Doc))
	explainFields(b, "", target, fields, m.Name())
}

// StrategyKeyPath resolves the path value p of the strategy's option key
// like CSVPath: relative to the config file's directory, or to the
// working directory when --set gave it.
func (c *Config) StrategyKeyPath(p, key string) string {
	return c.resolveKey(p, c.Strategy.Name, key)
}

// Sections lists the top-level sections of a config: those of Config, then
// the registered strategies' own sections, by name, then the old sections
// of options a strategy took over (moved.go), which a config may still set.
func Sections() []string {
	out := keysOf(fieldsOf(configType))
	out = append(out, slices.Sorted(maps.Keys(strategySections()))...)
	for _, k := range movedKeys() {
		if len(k.from) == 1 && !slices.Contains(out, k.from[0]) {
			out = append(out, k.from[0])
		}
	}
	return out
}
