package wasm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero/api"

	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/registry"
)

// maxAggregatorDepth bounds nested aggregator calls (a Multi of a
// DegreeScaler of a Multi ...), so that a module calling itself fails.
const maxAggregatorDepth = 4

// aggregators caches the aggregator modules a layer module loaded, by the
// name the layer used.
type aggregators struct {
	mu   sync.Mutex
	mods map[string]*Module
}

// notString records an error when a numeric option read names a string
// option.
func (st *callState) notString(fn, key string) {
	if v, ok := st.cfg.Strings[key]; ok {
		st.failf(fn, "option %q = %q is a string; the module reads it as a number", key, v)
	}
}

// aggregate runs aggregator name on (g, x) inside the current layer call
// and returns its result, or poison with the error recorded.
func (st *callState) aggregate(name string, g, x int32) int32 {
	const fn = "aggregate_with"
	if st.firstErr() != nil || g < 0 || x < 0 {
		return -1
	}
	if st.depth >= maxAggregatorDepth {
		st.failf(fn, "aggregator %q: aggregators nested more than %d deep (does one call itself?)", name, maxAggregatorDepth)
		return -1
	}
	if st.resolve == nil {
		st.failf(fn, "no aggregator modules can be loaded here")
		return -1
	}
	resume := st.clock.pause() // compiling is host time
	mod, err := st.resolve(name)
	resume()
	if err != nil {
		st.failf(fn, "%v", err)
		return -1
	}
	inst, err := mod.instantiate(st.ctx, mod.rt.def, mod.compiled, st.out)
	if err != nil {
		st.failf(fn, "aggregator %q cannot be instantiated: %v", name, err)
		return -1
	}
	defer inst.Close(context.WithoutCancel(st.ctx))
	saved := st.prefix
	st.prefix = fmt.Sprintf("%saggr%d.%s.", saved, st.naggr, mod.name)
	st.naggr++
	st.depth++
	res, err := inst.ExportedFunction("strata_aggregate").Call(st.ctx, api.EncodeI32(g), api.EncodeI32(x))
	st.depth--
	st.prefix = saved
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n") // wazero appends the wasm stack
		msg := fmt.Sprintf("aggregator %q: strata_aggregate trapped: %s", name, first)
		if s := stderrSummary(st.out.String()); s != "" {
			msg += "; guest stderr: " + s
		}
		if st.err == nil {
			st.err = errors.New(msg)
		}
		return -1
	}
	h := int32(uint32(res[0]))
	if h < 0 || st.firstErr() != nil {
		if st.firstErr() == nil {
			st.failf(fn, "aggregator %q returned no value (status %d)", name, h)
		}
		return -1
	}
	if s := st.b.Shape(h); len(s) != 2 || s[0] != ir.N {
		st.failf(fn, "aggregator %q returned a value of shape %s; an aggregator must return node rows [N,C]", name, ir.ShapeString(s))
		return -1
	}
	return h
}

// resolver returns the function that loads the aggregators a layer names:
// a module file a string option named (cfg.Modules, by that value), else
// the registered aggregator.<name>; loaded modules are kept in c.
func (r *Runtime) resolver(ctx context.Context, c *aggregators, cfg Config) func(string) (*Module, error) {
	return func(name string) (*Module, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if mod, ok := c.mods[name]; ok {
			return mod, nil
		}
		code, label := cfg.Modules[name], strings.TrimSuffix(filepath.Base(name), ".wasm")
		if code == nil {
			b, err := modhost.Lookup("aggregator." + name)
			if err != nil {
				return nil, fmt.Errorf("unknown aggregator %q (registered: %s; a module of your own: a path ending in .wasm)", name, strings.Join(AggregatorNames(), ", "))
			}
			code = b
		}
		mod, err := r.Load(ctx, label, code)
		if err != nil {
			return nil, fmt.Errorf("aggregator %q: %w", name, err)
		}
		if !mod.aggr {
			return nil, fmt.Errorf("aggregator %q: module %q does not export strata_aggregate (build it with sdk.RegisterAggregator, see docs/aggregators.md)", name, label)
		}
		if c.mods == nil {
			c.mods = map[string]*Module{}
		}
		c.mods[name] = mod
		return mod, nil
	}
}

// AggregatorGraph records aggregator name alone, as a one-layer graph with
// input x [N,in] over graph "adj": out = aggr(x), or aggr(x·W) with a
// learnable W [in,in] ("proj.weight") when project is set, so that a
// gradient check reaches the aggregator's input. cfg holds its options;
// the runtime keeps the modules it loads, by name.
func (r *Runtime) AggregatorGraph(ctx context.Context, name string, cfg Config, in int64, project bool) (*ir.Graph, error) {
	st := newLayerState(cfg, &outBuf{})
	st.resolve = r.resolver(ctx, &r.aggrs, cfg)
	cctx, cancel := withGuestDeadline(context.WithValue(ctx, stateKey{}, st), r.opts.Deadline)
	defer cancel()
	st.ctx, st.clock = cctx, cctx
	x := st.b.Input("x", in)
	if project {
		x = st.b.MatMul(x, st.b.Param("proj.weight", []int64{in, in}, "glorot"))
	}
	st.b.Output(st.aggregate(name, st.b.Graph("adj"), x))
	if err := st.firstErr(); err != nil {
		return nil, fmt.Errorf("aggregator %q: %w", name, err)
	}
	return st.b.Finish()
}

// AggregatorNames lists the registered aggregator modules.
func AggregatorNames() []string {
	var out []string
	for _, mi := range registry.Namespace("aggregator") {
		out = append(out, mi.Name())
	}
	return out
}
