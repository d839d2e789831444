package registry

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
)

// CleanerUpper is implemented by modules that hold something to release
// when the run that provisioned them ends (a file, a compiled WASM module,
// goroutines). Cleanup is called once, after the module's last use, by
// Lifecycle.Cleanup; also when its own Provision or Validate failed, so
// it must cope with a partial set-up.
type CleanerUpper interface {
	Cleanup() error
}

// Lifecycle runs modules through Caddy's order, each step once per
// module:
//
//	Decode     the config loader fills the module's options (or code sets
//	           them on a fresh instance from ModuleInfo.New)
//	Provision  set-up (Provisioner), now that the options are known
//	Validate   check the options and the set-up (Validator)
//	...        the module is used: no step above runs again
//	Cleanup    release what Provision set up (CleanerUpper), in the
//	           reverse order of provisioning
//
// A module that is not a Provisioner has nothing to set up, so the config
// loader validates it as it decodes it (ValidateDecoded), where an error
// can name the config line; ProvisionDecoded then does not validate it
// again. A Provisioner is validated after its Provision.
//
// Provision of a module already provisioned by the lifecycle is a no-op,
// so every user of a shared module may ask for it; Cleanup ends the cycle
// (a later Provision starts a new one). The zero Lifecycle is ready to
// use, and it is safe for concurrent use.
type Lifecycle struct {
	mu     sync.Mutex
	active bool         // Begin was called, Cleanup not yet
	live   []Module     // provisioned and valid, in order
	keys   map[any]bool // identities of live
}

// identity is what tells two modules apart for Lifecycle: the module
// itself when it is comparable (a pointer, as modules are), else nil
// (such a module has no identity and is provisioned on every call).
func identity(m Module) any {
	if reflect.ValueOf(m).Comparable() {
		return m
	}
	return nil
}

// Provision runs m, a module whose options were set in code (ModuleInfo.New
// or New, then its fields), through Provision and Validate, unless the
// lifecycle provisioned it already. The error names the module ID and the
// failed step and wraps the module's error; on an error the module is
// cleaned up at once and not kept.
func (l *Lifecycle) Provision(ctx context.Context, m Module) error {
	return l.provision(ctx, m, false)
}

// ProvisionDecoded is Provision for a module decoded and checked with
// ValidateDecoded: it is validated only when it is a Provisioner (which
// ValidateDecoded left for after its Provision).
func (l *Lifecycle) ProvisionDecoded(ctx context.Context, m Module) error {
	return l.provision(ctx, m, true)
}

func (l *Lifecycle) provision(ctx context.Context, m Module, decoded bool) error {
	if m == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	key := identity(m)
	if key != nil && l.keys[key] {
		return nil
	}
	id := m.StrataModule().ID
	p, isProv := m.(Provisioner)
	if isProv {
		if err := p.Provision(ctx); err != nil {
			return cleanupFailed(m, fmt.Errorf("%s: provision: %w", id, err))
		}
	}
	if v, ok := m.(Validator); ok && (!decoded || isProv) {
		if err := v.Validate(); err != nil {
			return cleanupFailed(m, fmt.Errorf("%s: %w", id, err))
		}
	}
	l.live = append(l.live, m)
	if key != nil {
		if l.keys == nil {
			l.keys = map[any]bool{}
		}
		l.keys[key] = true
	}
	return nil
}

// cleanupFailed cleans up a module whose Provision or Validate failed with
// err (Caddy does the same: a partial set-up must not leak).
func cleanupFailed(m Module, err error) error {
	if c, ok := m.(CleanerUpper); ok {
		if cerr := c.Cleanup(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("%s: cleanup: %w", m.StrataModule().ID, cerr))
		}
	}
	return err
}

// Cleanup calls Cleanup on every module the lifecycle provisioned that is
// a CleanerUpper, the last provisioned first, and ends the cycle. It
// calls them all and returns their errors joined (each naming its module
// ID); a second Cleanup is a no-op.
func (l *Lifecycle) Cleanup() error {
	l.mu.Lock()
	live := l.live
	l.live, l.keys, l.active = nil, nil, false
	l.mu.Unlock()
	var errs []error
	for i := len(live) - 1; i >= 0; i-- {
		if c, ok := live[i].(CleanerUpper); ok {
			if err := c.Cleanup(); err != nil {
				errs = append(errs, fmt.Errorf("%s: cleanup: %w", live[i].StrataModule().ID, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Begin starts a cycle for an owner that will call Cleanup: it reports
// whether the caller started it, false while a cycle begun before has not
// been cleaned up (its owner cleans up, not the caller).
func (l *Lifecycle) Begin() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active {
		return false
	}
	l.active = true
	return true
}

// Live reports how many modules the lifecycle holds provisioned.
func (l *Lifecycle) Live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.live)
}

// ValidateDecoded is the Validate step where a loader decodes a module's
// options (the config loader): it runs Validate unless m is a Provisioner,
// which Lifecycle.ProvisionDecoded validates after its Provision. The
// error is the module's own.
func ValidateDecoded(m Module) error {
	if _, ok := m.(Provisioner); ok {
		return nil
	}
	if v, ok := m.(Validator); ok {
		return v.Validate()
	}
	return nil
}

// Ready runs m, a module made in code rather than decoded from a config
// (a default the code picks, a module of a test), through a lifecycle of
// its own: Provision, then Validate, so that an invalid module is
// rejected before its first use. The caller calls cleanup after the
// module's last use. Code that uses a run's config provisions through the
// config instead (config.Config.Provision), so the run cleans up.
func Ready(ctx context.Context, m Module) (cleanup func() error, err error) {
	l := new(Lifecycle)
	if err := l.Provision(ctx, m); err != nil {
		return nil, err
	}
	return l.Cleanup, nil
}
