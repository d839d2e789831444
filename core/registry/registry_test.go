package registry

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// fake is a configurable test module.
type fake struct {
	id    string
	Width int `toml:"width"`
}

func (f *fake) StrataModule() ModuleInfo {
	id := f.id
	return ModuleInfo{ID: id, New: func() Module { return &fake{id: id, Width: 3} }, Doc: "test module"}
}

// Run reports its width; fakes implement the runner test interface.
func (f *fake) Run() int { return f.Width }

type runner interface{ Run() int }
type other interface{ Other() }

// isolate gives a test an empty registry and restores the real one after.
func isolate(t *testing.T) {
	t.Helper()
	mu.Lock()
	saved, savedUnav, savedAliases := maps.Clone(modules), maps.Clone(unavailable), maps.Clone(unavAliases)
	modules, unavailable, unavAliases = map[string]ModuleInfo{}, map[string]string{}, map[string][]string{}
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		modules, unavailable, unavAliases = saved, savedUnav, savedAliases
		mu.Unlock()
	})
}

// badNew reports an ID but its New returns another module.
type badNew struct{}

func (badNew) StrataModule() ModuleInfo {
	return ModuleInfo{ID: "sampler.bad", New: func() Module { return &fake{id: "sampler.other"} }}
}

type nilNew struct{}

func (nilNew) StrataModule() ModuleInfo { return ModuleInfo{ID: "sampler.nonew"} }

type nilInstance struct{}

func (nilInstance) StrataModule() ModuleInfo {
	return ModuleInfo{ID: "sampler.nilinst", New: func() Module { return (*fake)(nil) }}
}

func TestRegisterPanics(t *testing.T) {
	tests := []struct {
		name   string
		mod    Module
		substr string // in the panic message; "" = no panic
	}{
		{"ok", &fake{id: "sampler.ok"}, ""},
		{"ok with digits and dash", &fake{id: "model.gat-v2_1"}, ""},
		{"all namespaces: costmodel", &fake{id: "costmodel.roofline"}, ""},
		{"all namespaces: placement", &fake{id: "placement.greedy"}, ""},
		{"unknown namespace", &fake{id: "placements.greedy"}, "unknown namespace"},
		{"nil module", nil, "Register(nil)"},
		{"no dot", &fake{id: "sampler"}, "not of the form"},
		{"empty namespace", &fake{id: ".full"}, "not of the form"},
		{"unknown namespace", &fake{id: "samplers.full"}, "unknown namespace"},
		{"empty name", &fake{id: "cache."}, "empty name"},
		{"uppercase", &fake{id: "cache.Degree"}, "lowercase"},
		{"nested dot", &fake{id: "cache.a.b"}, "lowercase"},
		{"leading dash", &fake{id: "cache.-x"}, "lowercase"},
		{"nil New", nilNew{}, "no New function"},
		{"New returns nil", nilInstance{}, "returned nil"},
		{"New returns another ID", badNew{}, `whose ID is "sampler.other"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			msg := func() (msg string) {
				defer func() {
					if r := recover(); r != nil {
						msg, _ = r.(string)
						if msg == "" {
							msg = "non-string panic"
						}
					}
				}()
				Register(tt.mod)
				return ""
			}()
			if tt.substr == "" && msg != "" {
				t.Fatalf("unexpected panic: %s", msg)
			}
			if tt.substr != "" && !strings.Contains(msg, tt.substr) {
				t.Fatalf("panic %q, want it to contain %q", msg, tt.substr)
			}
		})
	}
}

func TestRegisterDuplicate(t *testing.T) {
	isolate(t)
	Register(&fake{id: "cache.dup"})
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, "registered twice") {
			t.Fatalf("panic %v, want a duplicate error", r)
		}
	}()
	Register(&fake{id: "cache.dup"})
}

// deflt is a fake that claims to be its namespace's default.
type deflt struct{ fake }

func (d *deflt) StrataModule() ModuleInfo {
	info := d.fake.StrataModule()
	id := d.id
	info.New, info.Default = func() Module { return &deflt{fake{id: id}} }, true
	return info
}

func TestDefaultName(t *testing.T) {
	isolate(t)
	if got := DefaultName("strategy"); got != "" {
		t.Fatalf("DefaultName of an empty namespace = %q", got)
	}
	Register(&fake{id: "strategy.a"})
	Register(&deflt{fake{id: "strategy.b"}})
	Register(&deflt{fake{id: "sampler.c"}}) // another namespace may have its own
	if got := DefaultName("strategy"); got != "b" {
		t.Fatalf("DefaultName = %q, want b", got)
	}
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, `"strategy.b" and "strategy.d" both claim`) {
			t.Fatalf("panic %v, want a second-default error", r)
		}
	}()
	Register(&deflt{fake{id: "strategy.d"}})
}

func TestLookupAndNamespace(t *testing.T) {
	isolate(t)
	for _, id := range []string{"sampler.full", "sampler.khop", "cache.degree", "cache.none", "model.gcn"} {
		Register(&fake{id: id})
	}
	tests := []struct {
		id      string
		wantErr []string // substrings; nil = success
	}{
		{"sampler.full", nil},
		{"model.gcn", nil},
		{"sampler.fulll", []string{`unknown module "sampler.fulll"`, `did you mean "sampler.full"`, `"sampler.full", "sampler.khop"`}},
		{"cache.lru", []string{`"cache.degree", "cache.none"`}},
		{"costmodel.x", []string{"no costmodel modules are registered"}},
		{"bogus.x", []string{`"bogus" is not a namespace`, "partitioner, sampler, cache, model, aggregator, costmodel, placement"}},
		{"nodot", []string{"not a namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			info, err := Lookup(tt.id)
			if tt.wantErr == nil {
				if err != nil || info.ID != tt.id {
					t.Fatalf("Lookup(%q) = %v, %v", tt.id, info.ID, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Lookup(%q) succeeded", tt.id)
			}
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("error does not wrap ErrNotFound: %v", err)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
	got := Namespace("sampler")
	if len(got) != 2 || got[0].ID != "sampler.full" || got[1].ID != "sampler.khop" {
		t.Fatalf("Namespace(sampler) = %v", got)
	}
	if got[0].Namespace() != "sampler" || got[0].Name() != "full" || got[0].Doc != "test module" {
		t.Fatalf("info accessors: %q %q %q", got[0].Namespace(), got[0].Name(), got[0].Doc)
	}
	if n := Namespace("costmodel"); len(n) != 0 {
		t.Fatalf("Namespace(costmodel) = %v", n)
	}
	// "cache" must not match a hypothetical "cachex" namespace prefix.
	if n := Namespace("cach"); len(n) != 0 {
		t.Fatalf("Namespace(cach) = %v", n)
	}
}

func TestNamespacesFixed(t *testing.T) {
	want := "backend,strategy,partitioner,sampler,cache,model,aggregator,costmodel,placement,comm,format,optimizer,lrschedule,decoder,negative"
	ns := Namespaces()
	if got := strings.Join(ns, ","); got != want {
		t.Fatalf("Namespaces() = %s", got)
	}
	ns[0] = "changed"
	if Namespaces()[0] != "backend" {
		t.Fatal("Namespaces returned the internal slice")
	}
}

func TestNewTyped(t *testing.T) {
	isolate(t)
	Register(&fake{id: "sampler.full"})
	r, err := New[runner]("sampler.full")
	if err != nil {
		t.Fatal(err)
	}
	if r.Run() != 3 {
		t.Fatalf("instance defaults not set: %d", r.Run())
	}
	r2, _ := New[runner]("sampler.full")
	if r2.(*fake) == r.(*fake) {
		t.Fatal("New returned a shared instance")
	}
	if _, err := New[other]("sampler.full"); err == nil || !strings.Contains(err.Error(), "does not implement registry.other") {
		t.Fatalf("interface mismatch error = %v", err)
	}
	if _, err := New[runner]("sampler.none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing module error = %v", err)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		s    string
		cand []string
		want string
	}{
		{"epoch", []string{"epochs", "lr", "seed"}, "epochs"},
		{"trian", []string{"train", "data", "model"}, "train"},
		{"adamw", []string{"adam", "sgd"}, "adam"},
		{"xyz", []string{"adam", "sgd"}, ""},
		{"lr", []string{"l2"}, "l2"},
		{"", []string{"a"}, "a"},
		{"abc", nil, ""},
		{"Hidden", []string{"hidden"}, "hidden"},
	}
	for _, tt := range tests {
		if got := Suggest(tt.s, tt.cand); got != tt.want {
			t.Errorf("Suggest(%q, %v) = %q, want %q", tt.s, tt.cand, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"epoch", "epochs", 1}, {"ab", "ba", 1}, {"trian", "train", 1}, {"same", "same", 0},
	}
	for _, tt := range tests {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// aliased is a fake that declares aliases.
type aliased struct {
	fake
	aliases []string
}

func (a *aliased) StrataModule() ModuleInfo {
	mi := a.fake.StrataModule()
	mi.Aliases = a.aliases
	mi.New = func() Module { return a }
	return mi
}

// TestAlias checks that Alias finds the module, registered or known but
// not in the build, that declares a name as its alias, within its
// namespace only, and never shadows a module's own name.
func TestAlias(t *testing.T) {
	isolate(t)
	Register(&aliased{fake{id: "model.sage"}, []string{"graphsage"}})
	Register(&aliased{fake{id: "model.gcn"}, []string{"gcn2", "kipf"}})
	Register(&fake{id: "model.gcn2"})
	RegisterUnavailable("backend.cuda", "rebuild with -tags cuda", "gpu")
	for _, tc := range []struct {
		ns, name, want string
	}{
		{"model", "graphsage", "model.sage"},
		{"model", "kipf", "model.gcn"},
		{"model", "gcn2", ""},        // a module's own name wins
		{"model", "sage", ""},        // a name is no alias of itself
		{"sampler", "graphsage", ""}, // another namespace
		{"backend", "gpu", "backend.cuda"},
		{"model", "gpu", ""},
		{"backend", "tpu", ""},
	} {
		got, ok := Alias(tc.ns, tc.name)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Alias(%q, %q) = %q, %v; want %q", tc.ns, tc.name, got, ok, tc.want)
		}
	}
	if Unavailable("backend.cuda") == "" {
		t.Error("the unavailable module lost its hint")
	}
}
