package registry

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// logged is a module of the lifecycle tests: it logs every step it is
// called for as "<name>.<step>" and fails the steps given an error.
type logged struct {
	name                 string
	log                  *[]string
	prov, valid, cleanup error // the errors of the steps
}

func (m *logged) StrataModule() ModuleInfo {
	return ModuleInfo{ID: "cache." + m.name, New: func() Module { return &logged{name: m.name} }}
}

func (m *logged) step(s string, err error) error {
	*m.log = append(*m.log, m.name+"."+s)
	return err
}

// full has every step; validOnly only Validate (nothing to set up).
type (
	full      struct{ logged }
	validOnly struct{ logged }
)

func (m *full) Provision(context.Context) error { return m.step("provision", m.prov) }
func (m *full) Validate() error                 { return m.step("validate", m.valid) }
func (m *full) Cleanup() error                  { return m.step("cleanup", m.cleanup) }
func (m *validOnly) Validate() error            { return m.step("validate", m.valid) }

var (
	errProv    = errors.New("cannot open the file")
	errValid   = errors.New("width = 0: must be >= 1")
	errCleanup = errors.New("cannot close the file")
)

func TestLifecycle(t *testing.T) {
	type mod struct {
		name                 string
		validOnly            bool // else full
		decoded              bool // ProvisionDecoded, else Provision
		prov, valid, cleanup error
	}
	tests := []struct {
		name    string
		mods    []mod
		log     string   // the steps, Provision of every module then Cleanup
		provErr string   // the error of the failing Provision ("" = none)
		wraps   []error  // what the errors wrap
		cleaned string   // the error of Cleanup
		names   []string // what the errors name
	}{
		{name: "one module: provision, validate, cleanup",
			mods: []mod{{name: "a"}},
			log:  "a.provision a.validate | a.cleanup"},
		{name: "cleanup in reverse order",
			mods: []mod{{name: "a"}, {name: "b"}, {name: "c"}},
			log:  "a.provision a.validate b.provision b.validate c.provision c.validate | c.cleanup b.cleanup a.cleanup"},
		{name: "decoded provisioner is validated after provision",
			mods: []mod{{name: "a", decoded: true}},
			log:  "a.provision a.validate | a.cleanup"},
		{name: "decoded module without Provision is not validated again",
			mods: []mod{{name: "a", decoded: true, validOnly: true}},
			log:  "|"},
		{name: "module without Provision made in code is validated",
			mods: []mod{{name: "a", validOnly: true}},
			log:  "a.validate |"},
		{name: "invalid module made in code is rejected",
			mods:    []mod{{name: "a", validOnly: true, valid: errValid}},
			log:     "a.validate |",
			provErr: "cache.a: width = 0: must be >= 1", wraps: []error{errValid}},
		{name: "provision error: cleaned up at once, not validated",
			mods:    []mod{{name: "a"}, {name: "b", prov: errProv}},
			log:     "a.provision a.validate b.provision b.cleanup | a.cleanup",
			provErr: "cache.b: provision: cannot open the file", wraps: []error{errProv}},
		{name: "validate error: cleaned up at once",
			mods:    []mod{{name: "a", valid: errValid}},
			log:     "a.provision a.validate a.cleanup |",
			provErr: "cache.a: width = 0: must be >= 1", wraps: []error{errValid}},
		{name: "cleanup errors are joined, every module cleaned up",
			mods:    []mod{{name: "a", cleanup: errCleanup}, {name: "b"}, {name: "c", cleanup: errCleanup}},
			log:     "a.provision a.validate b.provision b.validate c.provision c.validate | c.cleanup b.cleanup a.cleanup",
			cleaned: "cache.c: cleanup: cannot close the file\ncache.a: cleanup: cannot close the file", wraps: []error{errCleanup}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log []string
			var life Lifecycle
			var provErr error
			for _, m := range tt.mods {
				l := logged{name: m.name, log: &log, prov: m.prov, valid: m.valid, cleanup: m.cleanup}
				var mod Module = &full{l}
				if m.validOnly {
					mod = &validOnly{l}
				}
				var err error
				if m.decoded {
					err = life.ProvisionDecoded(context.Background(), mod)
				} else {
					err = life.Provision(context.Background(), mod)
				}
				if err != nil && provErr == nil {
					provErr = err
				}
			}
			log = append(log, "|")
			cleanErr := life.Cleanup()
			if got := strings.Join(log, " "); got != tt.log {
				t.Errorf("steps:\n got %s\nwant %s", got, tt.log)
			}
			for _, c := range []struct {
				what      string
				got       error
				want      string
				wantWraps bool
			}{{"Provision", provErr, tt.provErr, tt.provErr != ""}, {"Cleanup", cleanErr, tt.cleaned, tt.cleaned != ""}} {
				if c.got == nil && c.want == "" {
					continue
				}
				if c.got == nil || c.got.Error() != c.want {
					t.Errorf("%s error = %v, want %q", c.what, c.got, c.want)
					continue
				}
				for _, w := range tt.wraps {
					if c.wantWraps && !errors.Is(c.got, w) {
						t.Errorf("%s error %v does not wrap %v", c.what, c.got, w)
					}
				}
			}
			if n := life.Live(); n != 0 {
				t.Errorf("after Cleanup the lifecycle holds %d modules", n)
			}
		})
	}
}

// TestLifecycleOnce checks that every step runs once per module however
// often Provision and Cleanup are called, and that Begin tells the owner
// of a cycle.
func TestLifecycleOnce(t *testing.T) {
	var log []string
	var life Lifecycle
	a := &full{logged{name: "a", log: &log}}
	b := &validOnly{logged{name: "b", log: &log}}
	if !life.Begin() || life.Begin() {
		t.Fatal("Begin: want true for the first call only")
	}
	for range 3 {
		for _, m := range []Module{a, b, a} {
			if err := life.Provision(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := life.Live(); n != 2 {
		t.Fatalf("the lifecycle holds %d modules, want 2", n)
	}
	for range 2 {
		if err := life.Cleanup(); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := strings.Join(log, " "), "a.provision a.validate b.validate a.cleanup"; got != want {
		t.Fatalf("steps: got %s, want %s", got, want)
	}
	if !life.Begin() {
		t.Fatal("Begin after Cleanup: want a new cycle")
	}
}

func TestValidateDecoded(t *testing.T) {
	var log []string
	if err := ValidateDecoded(&validOnly{logged{name: "a", log: &log, valid: errValid}}); !errors.Is(err, errValid) {
		t.Errorf("a module without Provision: %v, want its Validate error", err)
	}
	if err := ValidateDecoded(&full{logged{name: "b", log: &log, valid: errValid}}); err != nil {
		t.Errorf("a Provisioner is validated after its Provision, not at decode: %v", err)
	}
	if err := ValidateDecoded(&fake{id: "cache.plain"}); err != nil {
		t.Error(err)
	}
	if got := strings.Join(log, " "); got != "a.validate" {
		t.Errorf("steps: %s", got)
	}
}

func TestReady(t *testing.T) {
	var log []string
	cleanup, err := Ready(context.Background(), &full{logged{name: "a", log: &log}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := Ready(context.Background(), &full{logged{name: "b", log: &log, valid: errValid}}); !errors.Is(err, errValid) || !strings.HasPrefix(err.Error(), "cache.b: ") {
		t.Errorf("Ready of an invalid module: %v", err)
	}
	if got, want := strings.Join(log, " "), "a.provision a.validate a.cleanup b.provision b.validate b.cleanup"; got != want {
		t.Errorf("steps: got %s, want %s", got, want)
	}
}
