// Package registry is strata's plugin registry, in the style of Caddy's
// modules. Every plugin (partitioner, sampler, cache policy, model, cost
// model, placement solver) is a Module with a namespaced ID such as
// "sampler.full"; packages register their modules from init, and configs
// pick them by name.
//
// A module's configuration is its own exported fields that carry a `toml`
// tag: ModuleInfo.New returns a fresh instance with the defaults set, the
// config loader decodes the plugin's TOML table into it. A Lifecycle then
// runs the rest of Caddy's module lifecycle once per module and run:
// Provision (see Provisioner), Validate (see Validator), and Cleanup
// (see CleanerUpper) when the run ends.
// Fields may carry a `doc` tag (one line, shown by `strata config explain`),
// and the config loader also enforces `enum:"a,b"` and `range:"[lo,hi)"`
// tags on them.
//
// This registry is the only global mutable state in strata. It is safe for
// concurrent use.
package registry

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Module is implemented by every plugin.
type Module interface {
	// StrataModule describes the module. It must not depend on the
	// receiver's configuration (it is called on fresh instances).
	StrataModule() ModuleInfo
}

// ModuleInfo describes a registered module.
type ModuleInfo struct {
	// ID is "<namespace>.<name>", e.g. "sampler.full". The namespace is one
	// of Namespaces(); the name is lowercase letters, digits, '_' and '-',
	// starting with a letter or digit.
	ID string
	// New returns a fresh instance with its defaults set. Its exported
	// fields with `toml:"..."` tags are the module's configuration.
	New func() Module
	// Doc is one line describing the module, for `strata list-plugins`.
	Doc string
	// Default marks the module a config gets when it names none of its
	// namespace (train.mode's default strategy); at most one module of a
	// namespace is the default, so core need not name it (DefaultName).
	Default bool
	// Aliases are other names users give the module ("graphsage" for
	// model.sage): a config that names one is refused with a suggestion
	// of this module (Alias), never silently accepted.
	Aliases []string
}

// Namespace returns the part of the ID before the first dot.
func (mi ModuleInfo) Namespace() string {
	ns, _, _ := strings.Cut(mi.ID, ".")
	return ns
}

// Name returns the part of the ID after the namespace ("full" for
// "sampler.full").
func (mi ModuleInfo) Name() string {
	_, name, _ := strings.Cut(mi.ID, ".")
	return name
}

// Validator is implemented by modules that check their own configuration.
// Validate is called once, after the module's options were decoded and
// it was provisioned (see Lifecycle), not on every call of the module.
type Validator interface {
	Validate() error
}

// Provisioner is implemented by modules that need set-up after their
// configuration was decoded (opening files, compiling a WASM module...);
// Validate runs after it. Lifecycle calls it, once per run.
type Provisioner interface {
	Provision(ctx context.Context) error
}

// ErrNotFound is wrapped by Lookup and New when no module has the ID.
var ErrNotFound = errors.New("module not found")

// namespaces is the fixed list of namespaces, in display order.
var namespaces = []string{"backend", "strategy", "partitioner", "sampler", "cache", "model", "aggregator", "costmodel", "placement", "comm", "format", "optimizer", "lrschedule", "decoder", "negative"}

var (
	mu          sync.RWMutex
	modules     = map[string]ModuleInfo{}
	unavailable = map[string]string{}   // ID -> how to get it into a build
	unavAliases = map[string][]string{} // ID of an unavailable module -> its aliases
)

// Namespaces returns the fixed list of module namespaces: backend,
// strategy, partitioner, sampler, cache, model, aggregator, costmodel,
// placement, comm, format, optimizer, lrschedule, decoder, negative.
func Namespaces() []string { return slices.Clone(namespaces) }

// RegisterUnavailable records a module that exists but is not compiled
// into this build (the cuda backend without its build tag), with the way
// to get it (hint) and the other names users give it (aliases, as
// ModuleInfo.Aliases). Lookup of its ID then fails with the hint instead
// of "unknown module". Registering the module itself wins over this.
func RegisterUnavailable(id, hint string, aliases ...string) {
	if err := checkID(id); err != nil {
		panic("registry: " + err.Error())
	}
	mu.Lock()
	defer mu.Unlock()
	unavailable[id] = hint
	unavAliases[id] = aliases
}

// Alias returns the ID of the module of namespace ns that declares name
// as an alias (ModuleInfo.Aliases, or RegisterUnavailable's), registered
// or known but not in this build; false when none does. A name that is a
// module's own is never an alias: the module wins.
func Alias(ns, name string) (string, bool) {
	mu.RLock()
	defer mu.RUnlock()
	if _, own := modules[ns+"."+name]; own {
		return "", false
	}
	var ids []string
	for id, m := range modules {
		if m.Namespace() == ns && slices.Contains(m.Aliases, name) {
			ids = append(ids, id)
		}
	}
	for id, as := range unavAliases {
		if _, reg := modules[id]; !reg && strings.HasPrefix(id, ns+".") && slices.Contains(as, name) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", false
	}
	slices.Sort(ids)
	return ids[0], true
}

// Unavailable returns the hint for a module that is known but not in this
// build, or "" (also when the module is registered).
func Unavailable(id string) string {
	mu.RLock()
	defer mu.RUnlock()
	if _, ok := modules[id]; ok {
		return ""
	}
	return unavailable[id]
}

// Register adds a module. It is meant to be called from init and panics on
// a programmer error: a malformed or duplicate ID, a nil New, or a New whose
// instance reports a different ID.
func Register(m Module) {
	if m == nil {
		panic("registry: Register(nil)")
	}
	info := m.StrataModule()
	if err := checkID(info.ID); err != nil {
		panic("registry: " + err.Error())
	}
	if info.New == nil {
		panic(fmt.Sprintf("registry: module %q has no New function", info.ID))
	}
	inst := info.New()
	if inst == nil || (reflect.ValueOf(inst).Kind() == reflect.Pointer && reflect.ValueOf(inst).IsNil()) {
		panic(fmt.Sprintf("registry: New of module %q returned nil", info.ID))
	}
	if got := inst.StrataModule().ID; got != info.ID {
		panic(fmt.Sprintf("registry: New of module %q returns an instance whose ID is %q", info.ID, got))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := modules[info.ID]; dup {
		panic(fmt.Sprintf("registry: module %q registered twice", info.ID))
	}
	if info.Default {
		for id, m := range modules {
			if m.Default && m.Namespace() == info.Namespace() {
				panic(fmt.Sprintf("registry: modules %q and %q both claim to be the default of namespace %q", id, info.ID, info.Namespace()))
			}
		}
	}
	modules[info.ID] = info
}

// DefaultName returns the name of the namespace's default module (see
// ModuleInfo.Default), or "" when none is registered.
func DefaultName(ns string) string {
	for _, m := range Namespace(ns) {
		if m.Default {
			return m.Name()
		}
	}
	return ""
}

// checkID reports whether id is "<known namespace>.<name>".
func checkID(id string) error {
	ns, name, ok := strings.Cut(id, ".")
	if !ok || ns == "" {
		return fmt.Errorf("module ID %q is not of the form <namespace>.<name>", id)
	}
	if !slices.Contains(namespaces, ns) {
		return fmt.Errorf("module ID %q: unknown namespace %q (namespaces: %s)", id, ns, strings.Join(namespaces, ", "))
	}
	if name == "" {
		return fmt.Errorf("module ID %q has an empty name", id)
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '_' || r == '-') && i > 0:
		default:
			return fmt.Errorf("module ID %q: name %q may only hold lowercase letters, digits, '_' and '-' (not starting with '_' or '-')", id, name)
		}
	}
	return nil
}

// Lookup returns the module with the given ID. The error wraps ErrNotFound
// and lists the known IDs of the namespace (or the namespaces, when the
// namespace itself is unknown).
func Lookup(id string) (ModuleInfo, error) {
	mu.RLock()
	info, ok := modules[id]
	mu.RUnlock()
	if ok {
		return info, nil
	}
	ns, _, _ := strings.Cut(id, ".")
	if hint := Unavailable(id); hint != "" {
		return ModuleInfo{}, fmt.Errorf("module %q is not in this build: %s: %w", id, hint, ErrNotFound)
	}
	if !slices.Contains(namespaces, ns) {
		return ModuleInfo{}, fmt.Errorf("unknown module %q: %q is not a namespace (namespaces: %s): %w",
			id, ns, strings.Join(namespaces, ", "), ErrNotFound)
	}
	var known []string
	for _, m := range Namespace(ns) {
		known = append(known, m.ID)
	}
	if len(known) == 0 {
		return ModuleInfo{}, fmt.Errorf("unknown module %q: no %s modules are registered: %w", id, ns, ErrNotFound)
	}
	msg := fmt.Sprintf("unknown module %q", id)
	if s := Suggest(id, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ModuleInfo{}, fmt.Errorf("%s; known %s modules: %s: %w", msg, ns, QuoteList(known), ErrNotFound)
}

// Namespace returns the modules of a namespace, sorted by ID.
func Namespace(ns string) []ModuleInfo {
	mu.RLock()
	defer mu.RUnlock()
	var out []ModuleInfo
	for id, m := range modules {
		if strings.HasPrefix(id, ns+".") {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b ModuleInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// New instantiates the module with the given ID and asserts that it
// implements T (the namespace's interface, e.g. sampler.Sampler).
func New[T any](id string) (T, error) {
	var zero T
	info, err := Lookup(id)
	if err != nil {
		return zero, err
	}
	m := info.New()
	t, ok := m.(T)
	if !ok {
		return zero, fmt.Errorf("module %q (%T) does not implement %s", id, m, reflect.TypeFor[T]())
	}
	return t, nil
}

// QuoteList formats names as `"a", "b", "c"`.
func QuoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// Suggest returns the candidate closest to s by edit distance when it is
// close enough to be a likely typo, or "".
func Suggest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := EditDistance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(1, min(len(s), len(best))/3)
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b (in bytes),
// counting a transposition of two adjacent characters as one edit.
func EditDistance(a, b string) int {
	// Optimal string alignment distance, three rows.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// UnavailableIn returns, sorted, the IDs of namespace ns that are known
// but not in this build.
func UnavailableIn(ns string) []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for id := range unavailable {
		if _, ok := modules[id]; !ok && strings.HasPrefix(id, ns+".") {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
