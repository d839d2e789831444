package config

import (
	"fmt"
	"slices"
	"strings"

	"strata/core/registry"
)

// valueAlias is another name users give one of an enum key's values
// (tag alias:"adamw=adam note"): a config that writes it is refused with
// a suggestion of target, and why. An alias that is itself an allowed
// value is never consulted: the value is simply accepted.
type valueAlias struct{ name, target, note string }

// parseAliasTag reads an alias tag: entries separated by '|', each
// "name=target" optionally followed by a space and a note.
func parseAliasTag(tag string) []valueAlias {
	var out []valueAlias
	for e := range strings.SplitSeq(tag, "|") {
		pair, note, _ := strings.Cut(strings.TrimSpace(e), " ")
		name, target, ok := strings.Cut(pair, "=")
		if !ok || name == "" || target == "" {
			panic(fmt.Sprintf("config: bad alias tag %q: want name=target [note]", tag))
		}
		out = append(out, valueAlias{name, target, note})
	}
	return out
}

// aliasSuggestion returns what to suggest for a value s of f that f does
// not take but that names something it does under another name: a module
// of f's namespace that declares s as an alias (registry.Alias) or one of
// f's value aliases whose target is allowed. ok is false when s is no
// alias (the caller then suggests by spelling).
func aliasSuggestion(f *field, s string) (string, bool) {
	if f.modules != "" {
		return moduleAliasSuggestion(f.modules, s)
	}
	for _, a := range f.valueAliases {
		if a.name == s && slices.Contains(f.allowed(), a.target) {
			msg := fmt.Sprintf("did you mean %q?", a.target)
			if a.note != "" {
				msg += " " + a.note
			}
			return msg, true
		}
	}
	return "", false
}

// moduleAliasSuggestion is aliasSuggestion for a name of namespace ns:
// the module that declares s as an alias, and how to get it when it is
// not in this build.
func moduleAliasSuggestion(ns, s string) (string, bool) {
	id, ok := registry.Alias(ns, s)
	if !ok {
		return "", false
	}
	name := strings.TrimPrefix(id, ns+".")
	if hint := registry.Unavailable(id); hint != "" {
		return fmt.Sprintf("did you mean %q? %q is %s, which is not in this build: %s", name, s, id, hint), true
	}
	return fmt.Sprintf("did you mean %q? %q is another name for %s", name, s, id), true
}
