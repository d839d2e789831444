package config

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"strata/core/registry"
)

// lifeLog records the lifecycle steps of the lifeModule instances.
var lifeLog []string

var errStep = errors.New("boom")

// lifeModule has every step of the lifecycle and logs them with the
// decoded width; fail names a step to fail.
type lifeModule struct {
	id    string
	Width int    `toml:"width"`
	Fail  string `toml:"fail"`
}

func (m *lifeModule) StrataModule() registry.ModuleInfo {
	id := m.id
	return registry.ModuleInfo{ID: id, New: func() registry.Module { return &lifeModule{id: id, Width: 1} }}
}

func (m *lifeModule) step(s string) error {
	ns, _, _ := strings.Cut(m.id, ".")
	lifeLog = append(lifeLog, fmt.Sprintf("%s.%s(%d)", ns, s, m.Width))
	if m.Fail == s {
		return errStep
	}
	return nil
}

func (m *lifeModule) Provision(context.Context) error { return m.step("provision") }
func (m *lifeModule) Validate() error                 { return m.step("validate") }
func (m *lifeModule) Cleanup() error                  { return m.step("cleanup") }

// countModule has only Validate, and counts its calls.
type countModule struct {
	Width int `toml:"width"`
}

var countValidate int

func (*countModule) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "partitioner.zz-count", New: func() registry.Module { return &countModule{Width: 1} }}
}

func (m *countModule) Validate() error {
	countValidate++
	if m.Width < 1 {
		return fmt.Errorf("width = %d: must be >= 1", m.Width)
	}
	return nil
}

func init() {
	for _, id := range []string{"sampler.zz-life", "cache.zz-life", "placement.zz-life"} {
		registry.Register(&lifeModule{id: id})
	}
	registry.Register(new(countModule))
}

const lifeSections = minimal + `
[sampler]
name = "zz-life"
width = 2
[cache]
name = "zz-life"
width = 3
[placement]
name = "zz-life"
width = 4
`

const lifeSampler = minimal + "[sampler]\nname = \"zz-life\"\nwidth = 2\n"

func TestConfigLifecycle(t *testing.T) {
	all := "sampler.provision(2) sampler.validate(2) cache.provision(3) cache.validate(3) placement.provision(4) placement.validate(4)"
	cleanup := "placement.cleanup(4) cache.cleanup(3) sampler.cleanup(2)"
	tests := []struct {
		name     string
		set      []string
		log      string // after Provision | after release
		err      string
		errIsStp bool
	}{
		{name: "decode, provision, validate, cleanup in reverse",
			log: all + " | " + cleanup},
		{name: "provision error: the provisioned ones are cleaned up",
			set: []string{`cache.fail="provision"`},
			log: "sampler.provision(2) sampler.validate(2) cache.provision(3) cache.cleanup(3) sampler.cleanup(2) |",
			err: "cache: cache.zz-life: provision: boom", errIsStp: true},
		{name: "validate error after provision",
			set: []string{`placement.fail="validate"`},
			log: "sampler.provision(2) sampler.validate(2) cache.provision(3) cache.validate(3) placement.provision(4) placement.validate(4) placement.cleanup(4) cache.cleanup(3) sampler.cleanup(2) |",
			err: "placement: placement.zz-life: boom", errIsStp: true},
		{name: "cleanup error names the module, the others are cleaned up",
			set: []string{`cache.fail="cleanup"`},
			log: all + " | " + cleanup,
			err: "cache.zz-life: cleanup: boom", errIsStp: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("life.toml", []byte(lifeSections), tt.set...)
			if err != nil {
				t.Fatal(err)
			}
			lifeLog = nil // decoding a Provisioner does not validate it
			release, err := c.Provision(context.Background())
			lifeLog = append(lifeLog, "|")
			if err == nil {
				err = release()
			}
			if got := strings.Join(lifeLog, " "); got != strings.TrimSpace(tt.log) {
				t.Errorf("steps:\n got %s\nwant %s", got, tt.log)
			}
			if (err == nil) != (tt.err == "") || err != nil && err.Error() != tt.err {
				t.Errorf("error = %v, want %q", err, tt.err)
			}
			if tt.errIsStp && !errors.Is(err, errStep) {
				t.Errorf("error %v does not wrap the module's", err)
			}
		})
	}
}

// TestConfigProvisionOnce checks that a config is provisioned once
// however often Provision is called (only the first caller's release
// cleans up), and that a module the run makes in code is cleaned up with
// the config's.
func TestConfigProvisionOnce(t *testing.T) {
	c, err := Parse("life.toml", []byte(lifeSampler))
	if err != nil {
		t.Fatal(err)
	}
	lifeLog = nil
	release, err := c.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	extra := &lifeModule{id: "cache.zz-life", Width: 7}
	for range 2 {
		inner, err := c.Provision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ProvisionModule(context.Background(), "cache", extra); err != nil {
			t.Fatal(err)
		}
		if err := inner(); err != nil {
			t.Fatal(err)
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := c.Cleanup(); err != nil {
		t.Fatal(err)
	}
	want := "sampler.provision(2) sampler.validate(2) cache.provision(7) cache.validate(7) cache.cleanup(7) sampler.cleanup(2)"
	if got := strings.Join(lifeLog, " "); got != want {
		t.Fatalf("steps:\n got %s\nwant %s", got, want)
	}
}

// TestValidatedOnceAtLoad checks that a module without Provision is
// validated when the config is decoded, an invalid one rejected there,
// and that provisioning and using it does not validate it again.
func TestValidatedOnceAtLoad(t *testing.T) {
	countValidate = 0
	if _, err := Parse("c.toml", []byte(minimal+"[partition]\nname = \"zz-count\"\nwidth = 0\n")); err == nil ||
		!strings.Contains(err.Error(), "partition (partitioner.zz-count): width = 0: must be >= 1") {
		t.Fatalf("an invalid module at load: %v", err)
	}
	c, err := Parse("c.toml", []byte(minimal+"[partition]\nname = \"zz-count\"\nwidth = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if countValidate != 2 {
		t.Fatalf("Validate ran %d times for two loads, want 2", countValidate)
	}
	_, err = Provisioned(context.Background(), c, func() (int, error) { return c.Partition.Module.(*countModule).Width, nil })
	if err != nil || countValidate != 2 {
		t.Fatalf("Provisioned: %v; Validate ran %d times, want 2 (once per load)", err, countValidate)
	}
}

// TestProvisioned checks that the run's error comes back as it is and
// that the modules are cleaned up on an error exit too.
func TestProvisioned(t *testing.T) {
	c, err := Parse("life.toml", []byte(lifeSampler))
	if err != nil {
		t.Fatal(err)
	}
	runErr := &Error{Msg: "diverged"}
	for _, tt := range []struct {
		name string
		f    func() (int, error)
		want func(error) bool
	}{
		{"success", func() (int, error) { return 1, nil }, func(err error) bool { return err == nil }},
		{"error exit", func() (int, error) { return 0, runErr }, func(err error) bool { return err == error(runErr) }},
		{"cancelled", func() (int, error) { return 0, context.Canceled }, func(err error) bool { return err == context.Canceled }},
	} {
		lifeLog = nil
		_, err := Provisioned(context.Background(), c, tt.f)
		if !tt.want(err) {
			t.Errorf("%s: error %v", tt.name, err)
		}
		if got := strings.Join(lifeLog, " "); got != "sampler.provision(2) sampler.validate(2) sampler.cleanup(2)" {
			t.Errorf("%s: steps %s", tt.name, got)
		}
	}
	c2, _ := Parse("life.toml", []byte(lifeSampler), `sampler.fail="cleanup"`)
	if _, err := Provisioned(context.Background(), c2, func() (int, error) { return 0, runErr }); !errors.Is(err, runErr) || !errors.Is(err, errStep) {
		t.Errorf("a cleanup error after an error exit: %v, want both joined", err)
	}
}
