package config

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"strata/core/registry"
)

// lifeMu guards the creation of Config.life.
var lifeMu sync.Mutex

// lifecycle returns the config's module lifecycle, made on first use.
// Copies of a Config share it once it exists, as they share the modules.
func (c *Config) lifecycle() *registry.Lifecycle {
	lifeMu.Lock()
	defer lifeMu.Unlock()
	if c.life == nil {
		c.life = new(registry.Lifecycle)
	}
	return c.life
}

// sections returns the key and the module of every plugin section that
// names one, in the order of the Config struct (sampler, cache,
// partition, placement), then the strategy's: the order they are
// provisioned in.
func (c *Config) sections() (keys []string, mods []registry.Module) {
	rv := reflect.ValueOf(c).Elem()
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		for _, f := range fieldsOf(v.Type()) {
			fv := v.FieldByIndex(f.index)
			switch {
			case f.typ == pluginType:
				if p := fv.Interface().(Plugin); p.Module != nil {
					keys, mods = append(keys, prefix+f.key), append(mods, p.Module)
				}
			case f.typ.Kind() == reflect.Struct:
				walk(fv, prefix+f.key+".")
			}
		}
	}
	walk(rv, "")
	if c.Strategy.Module != nil {
		// The strategy train.mode names, from its own section, last:
		// it may use the modules of the others.
		keys, mods = append(keys, c.Strategy.Name), append(mods, c.Strategy.Module)
	}
	return keys, mods
}

// Provision runs the modules of the config's plugin sections through the
// rest of the registry lifecycle (registry.Lifecycle): each is
// provisioned (and, if it is a registry.Provisioner, validated) once,
// section by section. The modules were decoded and validated when the
// config was parsed; Provision is for the start of a run (training,
// train.Check, predict, partition and hitratio reports), before a module
// is used. An error names the section and the module ID and wraps the
// module's error.
//
// The first call provisions and returns release, which ends the cycle
// (Cleanup); until then, a later call provisions nothing and returns a release that does nothing, so the outermost
// caller cleans up. Call release on every path, e.g. deferred.
func (c *Config) Provision(ctx context.Context) (release func() error, err error) {
	life := c.lifecycle()
	if !life.Begin() {
		return func() error { return nil }, nil
	}
	keys, mods := c.sections()
	for i, m := range mods {
		if err := life.ProvisionDecoded(ctx, m); err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", keys[i], err), life.Cleanup())
		}
	}
	return c.Cleanup, nil
}

// ProvisionModule runs m, a module a run makes in code instead of taking
// it from a section (a default partitioner, a partitioner whose options a
// strategy sets), through the config's lifecycle: it is provisioned and
// validated now (once) and cleaned up with the config's modules. what
// names it in an error ("partition").
func (c *Config) ProvisionModule(ctx context.Context, what string, m registry.Module) error {
	if err := c.lifecycle().Provision(ctx, m); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Cleanup cleans up every module the config provisioned, the last
// provisioned first (registry.Lifecycle.Cleanup), and ends the cycle; the
// errors are joined. A second call does nothing.
func (c *Config) Cleanup() error {
	return c.lifecycle().Cleanup()
}

// Provisioned calls f between cfg.Provision and its release, deferred, so
// the modules are cleaned up however f ends (a panic included): the entry
// points of a run (train.Run, train.Check, train.Predict, the partition
// and hitratio reports) wrap their work in it. A cleanup error is joined
// to f's; f's error is returned as it is otherwise.
func Provisioned[T any](ctx context.Context, cfg *Config, f func() (T, error)) (res T, err error) {
	release, err := cfg.Provision(ctx)
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := release(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	return f()
}
