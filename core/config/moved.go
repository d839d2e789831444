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

// Keys a strategy took over from core. An option that only one strategy
// reads once lived in a section of Config (train.overlap, [store]); its
// strategy now declares it in its own section and says where it was with
// a `moved:"<old path>"` tag on the field. Then:
//
//   - a config that sets the old key decodes as if it set the new one, so
//     no file needs an edit (an experiment's axis "store.graph_ratio" too);
//     setting both is an error;
//   - the canonical form (config_sha256 and every run ID) keeps the key at
//     its old place, for every config: the strategy's value when it is
//     train.mode, else the field's default (as Config held it before),
//     left out at its default when the field says hash:"omitdefault" (as
//     the old section did). Published run IDs stay the same.
//
// Core names no strategy here: the moves are read from the registry.

// movedKey is one option of a strategy section declared with a moved tag.
type movedKey struct {
	from    []string // the old path, e.g. train.overlap
	section string   // the strategy's section, e.g. minibatch
	f       field    // the option's field in the strategy's struct
}

// newPath is the key's path in the strategy's section.
func (k movedKey) newPath() []string { return []string{k.section, k.f.key} }

// movedKeys returns every moved option of the registered strategies,
// ordered by section and key.
func movedKeys() []movedKey {
	secs := strategySections()
	var out []movedKey
	for _, name := range slices.Sorted(maps.Keys(secs)) {
		fields, _ := moduleFields(secs[name].New())
		for _, f := range fields {
			if len(f.moved) > 0 {
				out = append(out, movedKey{from: f.moved, section: name, f: f})
			}
		}
	}
	return out
}

// moveKeys moves the values raw sets at a moved key's old path into the
// strategy's section in sections (taken from raw before), with the
// positions of their lines; it returns the keys it moved, by section.
func (d *decoder) moveKeys(raw, sections map[string]any) map[string][]movedKey {
	moved := map[string][]movedKey{}
	mode := rawMode(raw)
	for _, k := range owners(movedKeys(), mode) {
		v, ok := takePath(raw, k.from)
		if !ok {
			continue
		}
		sec, isMap := unwrap(sections[k.section], reflect.Map).(map[string]any)
		if sections[k.section] != nil && !isMap {
			d.errorf(k.from, "%s: the key moved to %s, but %s is not a table", toml.Key(k.from), toml.Key(k.newPath()), k.section)
			continue
		}
		if sec == nil {
			sec = map[string]any{}
			sections[k.section] = sec
		}
		if _, both := sec[k.f.key]; both {
			d.errorf(k.from, "%s and %s set the same option; keep %s (the key moved there; the old spelling is still read)",
				toml.Key(k.from), toml.Key(k.newPath()), toml.Key(k.newPath()))
			continue
		}
		sec[k.f.key] = v
		d.src.alias(k.from, k.newPath())
		moved[k.section] = append(moved[k.section], k)
	}
	return moved
}

// owners picks, for each old path that several strategies took over
// (train.batch_size, say), the one key that stands for it: the strategy
// mode's, else the first by section name (whose default the canonical form
// then holds; owners of one path share its default, as Config had one).
func owners(keys []movedKey, mode string) []movedKey {
	var out []movedKey
	at := map[string]int{}
	for _, k := range keys {
		path := toml.Key(k.from).String()
		i, seen := at[path]
		switch {
		case !seen:
			at[path] = len(out)
			out = append(out, k)
		case k.section == mode:
			out[i] = k
		}
	}
	return out
}

// dropOtherSpelling lets an override win over the file in either
// spelling of a moved key: setting path (train.batch_size, or
// minibatch.batch_size) drops the file's value at the other spelling, so
// that --set minibatch.batch_size=64 on a file that says
// train.batch_size = 1024 is not "both spellings at once". Two overrides
// in both spellings still are.
func dropOtherSpelling(raw map[string]any, src *source, path []string) {
	for _, k := range movedKeys() {
		var other []string
		switch {
		case hasPrefix(path, k.from):
			other = append(slices.Clone(k.newPath()), path[len(k.from):]...)
		case hasPrefix(path, k.newPath()):
			other = append(slices.Clone(k.from), path[len(k.newPath()):]...)
		default:
			continue
		}
		if p, ok := src.pos[toml.Key(other).String()]; ok && p.override == "" {
			takePath(raw, other)
			delete(src.pos, toml.Key(other).String())
		}
	}
}

// hasPrefix reports whether path starts with prefix.
func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// rawMode is the train.mode a raw config sets, or the default.
func rawMode(raw map[string]any) string {
	if t, ok := unwrap(raw["train"], reflect.Map).(map[string]any); ok {
		if mode, ok := unwrap(t["mode"], reflect.String).(string); ok {
			return mode
		}
	}
	return Default().Train.Mode
}

// takePath removes and returns the value at path in raw.
func takePath(raw map[string]any, path []string) (any, bool) {
	cur := raw
	for _, p := range path[:len(path)-1] {
		next, ok := unwrap(cur[p], reflect.Map).(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	last := path[len(path)-1]
	v, ok := cur[last]
	if ok {
		delete(cur, last)
	}
	return v, ok
}

// alias makes the key new (and the keys under it) locatable at the lines
// of old, and named as old in errors, so that an error in a moved value
// names the key and line the config wrote.
func (s *source) alias(old, new []string) {
	o, n := toml.Key(old).String(), toml.Key(new).String()
	if s.spelled == nil {
		s.spelled = map[string]string{}
	}
	s.spelled[n] = o
	for k, p := range maps.Clone(s.pos) {
		if rest, ok := strings.CutPrefix(k, o); ok && (rest == "" || rest[0] == '.') {
			s.pos[n+rest] = p
		}
	}
}

// movedError is the error for a moved key the config sets (at its old
// place) for a strategy other than train.mode; it names every strategy
// that reads the key.
func (d *decoder) movedError(k movedKey, mode string) {
	var modes, paths []string
	for _, o := range movedKeys() {
		if slices.Equal(o.from, k.from) {
			modes = append(modes, fmt.Sprintf("%q", o.section))
			paths = append(paths, toml.Key(o.newPath()).String())
		}
	}
	msg := fmt.Sprintf("%s: an option of train.mode = %s (now %s), which train.mode = %q does not read; set train.mode = %s or remove it",
		toml.Key(k.from), strings.Join(modes, " or "), strings.Join(paths, ", "), mode, strings.Join(modes, " or "))
	d.errs = append(d.errs, d.src.verbatimErrorAt(k.from, msg))
}

// placeMovedKeys writes every moved key into the canonical tree m at its
// old path: the value of c.Strategy when it owns the key, else an
// owner's default.
func (c *Config) placeMovedKeys(m map[string]any) {
	for _, k := range owners(movedKeys(), c.Strategy.Name) {
		info, err := registry.Lookup(strategyNamespace + "." + k.section)
		if err != nil {
			continue
		}
		def := info.New()
		inst := def
		if c.Strategy.Name == k.section && c.Strategy.Module != nil {
			inst = c.Strategy.Module
		}
		_, target := moduleFields(inst)
		_, defTarget := moduleFields(def)
		fv := target.FieldByIndex(k.f.index)
		if k.f.omitdef && reflect.DeepEqual(fv.Interface(), defTarget.FieldByIndex(k.f.index).Interface()) {
			continue
		}
		tree := structMap(target, []field{k.f}, true)
		v, ok := tree[k.f.key]
		if !ok {
			continue
		}
		setPath(m, k.from, v)
	}
}

// setPath sets path in the tree m, creating its tables.
func setPath(m map[string]any, path []string, v any) {
	cur := m
	for _, p := range path[:len(path)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[path[len(path)-1]] = v
}

// withoutMoved returns a copy of the strategy instance inst whose fields
// that reset says are set to the defaults of def, so that comparing it
// with def ignores them.
func withoutMoved(inst, def registry.Module, reset func(field) bool) registry.Module {
	fields, target := moduleFields(inst)
	_, defTarget := moduleFields(def)
	cp := reflect.New(target.Type())
	cp.Elem().Set(target)
	for _, f := range fields {
		if reset(f) {
			cp.Elem().FieldByIndex(f.index).Set(defTarget.FieldByIndex(f.index))
		}
	}
	out, _ := cp.Interface().(registry.Module)
	return out
}

// isMoved reports whether f is a moved option.
func isMoved(f field) bool { return len(f.moved) > 0 }

// parseMovedTag reads a moved tag's old path; it panics on a malformed
// one (a programmer error in a strategy struct).
func parseMovedTag(t reflect.Type, name, tag string) []string {
	if tag == "" {
		return nil
	}
	path := strings.Split(tag, ".")
	if slices.Contains(path, "") {
		panic(fmt.Sprintf("config: %s.%s: bad moved tag %q", t, name, tag))
	}
	return path
}
