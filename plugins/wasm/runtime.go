// Package wasm runs strata layer and cost-model modules with wazero.
//
// A layer module records its op graph through the strata_v1 host imports
// (see ImportNames); every import forwards to an ir.Builder, which checks
// shapes as ops arrive. The host never trusts a guest: memory is limited,
// definition calls run under a deadline, guest memory is read with bounds
// checks, and traps come back as a CallError carrying the guest's stderr.
//
// Runtime and Module are safe for concurrent use. A CostModel is not: give
// each goroutine its own.
package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Options configure a Runtime. The zero value gives the defaults.
type Options struct {
	// CacheDir holds compiled modules across processes. "" means
	// os.UserCacheDir()/strata/wazero; "off" disables the cache.
	CacheDir string
	// MemoryLimitPages bounds each instance's linear memory in 64 KiB pages
	// (default 1024 = 64 MiB).
	MemoryLimitPages uint32
	// Deadline bounds each definition call: instantiation plus
	// strata_layer_spec, and a cost model's validation run (default 5s).
	Deadline time.Duration
}

// Defaults.
const (
	DefaultMemoryLimitPages = 1024
	DefaultDeadline         = 5 * time.Second
)

// Runtime owns two wazero runtimes that share one compilation cache: one
// that closes modules when their context is done (definitions, validation;
// each call pays ~1 µs and loops run 5-15x slower) and a fast one for
// trusted hot calls (cost-model predictions).
type Runtime struct {
	opts     Options
	cache    wazero.CompilationCache
	cacheDir string
	def      wazero.Runtime // WithCloseOnContextDone
	fast     wazero.Runtime // no closeOnDone
	workers  int
	closeMu  sync.Mutex
	closed   bool
	aggrs    aggregators // loaded by AggregatorGraph
}

// NewRuntime creates a runtime. Close it to release the compiled code.
func NewRuntime(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.MemoryLimitPages == 0 {
		opts.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if opts.MemoryLimitPages > 65536 {
		return nil, fmt.Errorf("wasm: memory limit %d pages exceeds the 4 GiB address space (65536 pages)", opts.MemoryLimitPages)
	}
	if opts.Deadline <= 0 {
		opts.Deadline = DefaultDeadline
	}
	r := &Runtime{opts: opts, workers: min(runtime.GOMAXPROCS(0), 4)}
	switch opts.CacheDir {
	case "off":
	case "":
		if dir, err := os.UserCacheDir(); err == nil {
			r.cacheDir = filepath.Join(dir, "strata", "wazero")
		}
	default:
		r.cacheDir = opts.CacheDir
	}
	if r.cacheDir != "" {
		if err := usableCacheDir(r.cacheDir); err != nil {
			warnf("compiled-module cache %s cannot be written (%v); running without it (set -wasm-cache to another directory, or \"off\")", r.cacheDir, err)
			r.cacheDir = ""
		}
	}
	if r.cacheDir != "" {
		if n := sanitizeCache(r.cacheDir); n > 0 {
			warnf("compiled-module cache %s: deleted %d corrupt entries; their modules are compiled afresh", r.cacheDir, n)
		}
		c, err := wazero.NewCompilationCacheWithDir(r.cacheDir)
		if err != nil {
			warnf("compiled-module cache %s: %v; running without it", r.cacheDir, err)
			r.cacheDir = ""
		} else {
			r.cache = c
		}
	}
	newRT := func(closeOnDone bool) (wazero.Runtime, error) {
		cfg := wazero.NewRuntimeConfigCompiler().
			WithMemoryLimitPages(opts.MemoryLimitPages).
			WithCloseOnContextDone(closeOnDone)
		if r.cache != nil {
			cfg = cfg.WithCompilationCache(r.cache)
		}
		rt := wazero.NewRuntimeWithConfig(ctx, cfg)
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			rt.Close(ctx)
			return nil, fmt.Errorf("wasm: instantiating WASI: %w", err)
		}
		hb := rt.NewHostModuleBuilder(ImportModule)
		for _, f := range hostFuncs {
			hb.NewFunctionBuilder().
				WithGoModuleFunction(api.GoModuleFunc(f.call), f.params, f.results).
				Export(f.name)
		}
		if _, err := hb.Instantiate(ctx); err != nil {
			rt.Close(ctx)
			return nil, fmt.Errorf("wasm: instantiating %s: %w", ImportModule, err)
		}
		return rt, nil
	}
	var err error
	if r.def, err = newRT(true); err != nil {
		r.closeCache(ctx)
		return nil, err
	}
	if r.fast, err = newRT(false); err != nil {
		r.def.Close(ctx)
		r.closeCache(ctx)
		return nil, err
	}
	return r, nil
}

func (r *Runtime) closeCache(ctx context.Context) {
	if r.cache != nil {
		_ = r.cache.Close(ctx)
	}
}

// Options returns the effective options (defaults filled in).
func (r *Runtime) Options() Options { return r.opts }

// CacheDir returns the compilation cache directory, "" when disabled.
func (r *Runtime) CacheDir() string { return r.cacheDir }

// Close releases every module, instance and compiled artefact of r.
func (r *Runtime) Close(ctx context.Context) error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	err := errors.Join(r.def.Close(ctx), r.fast.Close(ctx))
	r.closeCache(ctx)
	return err
}

// Module is a compiled, validated strata module.
type Module struct {
	rt       *Runtime
	name     string
	sum      [sha256.Size]byte
	wasm     []byte
	compiled wazero.CompiledModule // in rt.def
	layer    bool
	cost     bool
	aggr     bool        // exports strata_aggregate
	dec      bool        // exports strata_decode
	aggrs    aggregators // the aggregators its layers loaded

	fastMu       sync.Mutex
	fastCompiled wazero.CompiledModule // in rt.fast, compiled on first CostModel
}

// Name returns the module's name as given to Load.
func (m *Module) Name() string { return m.name }

// SHA256 returns the hex digest of the module bytes (a cache key for specs).
func (m *Module) SHA256() string { return hex.EncodeToString(m.sum[:]) }

// IsLayer reports whether the module exports strata_layer_spec.
func (m *Module) IsLayer() bool { return m.layer }

// IsCostModel reports whether the module exports strata_cost_io and strata_cost.
func (m *Module) IsCostModel() bool { return m.cost }

// Close releases the module's compiled code (the runtime's Close does too).
func (m *Module) Close(ctx context.Context) error {
	err := m.compiled.Close(ctx)
	m.fastMu.Lock()
	defer m.fastMu.Unlock()
	if m.fastCompiled != nil {
		err = errors.Join(err, m.fastCompiled.Close(ctx))
		m.fastCompiled = nil
	}
	return err
}

var wasmMagic = []byte{0, 'a', 's', 'm'}

// Load compiles a module (through the on-disk cache), checks its imports and
// exports, and asks it which ABI version it speaks.
//
// Required exports: memory and strata_abi_version() i32 (must return 1);
// _initialize is run first when present (Go reactors built with
// -buildmode=c-shared have it; a WASI command with only _start is refused).
// Roles: strata_layer_spec() i32 makes a layer; strata_aggregate(i32, i32)
// i32 an aggregator; strata_decode(i32, i32) i32 a decoder;
// strata_cost_io() i32 plus strata_cost(i32) i32 make a cost model. A
// module needs at least one role.
func (r *Runtime) Load(ctx context.Context, name string, wasm []byte) (*Module, error) {
	fail := func(format string, args ...any) (*Module, error) {
		return nil, fmt.Errorf("module %q %s", name, fmt.Sprintf(format, args...))
	}
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], wasmMagic) {
		head := wasm[:min(len(wasm), 8)]
		return fail("is not a WebAssembly binary (it starts with %q, want \"\\x00asm\")", head)
	}
	cctx := experimental.WithCompilationWorkers(ctx, r.workers)
	compiled, err := r.compile(cctx, r.def, name, wasm)
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "over limit") {
			msg += fmt.Sprintf(" (the host's memory limit is %d pages)", r.opts.MemoryLimitPages)
		}
		return fail("does not compile: %s", msg)
	}
	m := &Module{rt: r, name: name, sum: sha256.Sum256(wasm), wasm: wasm, compiled: compiled}
	if err := m.checkInterface(); err != nil {
		compiled.Close(ctx)
		return nil, fmt.Errorf("module %q %w", name, err)
	}
	if err := m.checkVersion(ctx); err != nil {
		compiled.Close(ctx)
		return nil, err
	}
	return m, nil
}

type sig struct{ params, results []api.ValueType }

var (
	sigNoneI32  = sig{nil, vt(i32)}
	sigI32I32   = sig{vt(i32), vt(i32)}
	sigI32x2I32 = sig{vt(i32, i32), vt(i32)}
)

func (m *Module) checkInterface() error {
	c := m.compiled
	for _, f := range c.ImportedFunctions() {
		mod, name, _ := f.Import()
		if err := checkImport(mod, name, f.ParamTypes(), f.ResultTypes()); err != nil {
			return err
		}
	}
	for _, mem := range c.ImportedMemories() {
		mod, name, _ := mem.Import()
		return fmt.Errorf("imports memory %s.%s; a strata module must define and export its own memory", mod, name)
	}
	if _, ok := c.ExportedMemories()["memory"]; !ok {
		return fmt.Errorf("does not export its linear memory as \"memory\"")
	}
	exports := c.ExportedFunctions()
	has := func(name string, want sig) (bool, error) {
		f, ok := exports[name]
		if !ok {
			return false, nil
		}
		if !slices.Equal(f.ParamTypes(), want.params) || !slices.Equal(f.ResultTypes(), want.results) {
			return true, fmt.Errorf("exports %s with signature %s, want %s", name,
				sigString(f.ParamTypes(), f.ResultTypes()), sigString(want.params, want.results))
		}
		return true, nil
	}
	if ok, err := has("strata_abi_version", sigNoneI32); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("does not export strata_abi_version; is it a strata module? (Go guests get it from strata/models/sdk)")
	}
	if _, ok := exports["_initialize"]; !ok {
		if _, cmd := exports["_start"]; cmd {
			return fmt.Errorf("is a WASI command (it exports _start, not _initialize): build it as a reactor with -buildmode=c-shared")
		}
	}
	var err error
	if m.layer, err = has("strata_layer_spec", sigNoneI32); err != nil {
		return err
	}
	costIO, err := has("strata_cost_io", sigNoneI32)
	if err != nil {
		return err
	}
	cost, err := has("strata_cost", sigI32I32)
	if err != nil {
		return err
	}
	if costIO != cost {
		return fmt.Errorf("exports only one of strata_cost_io and strata_cost; a cost model needs both")
	}
	m.cost = cost
	if m.aggr, err = has("strata_aggregate", sigI32x2I32); err != nil {
		return err
	}
	if m.dec, err = has("strata_decode", sigI32x2I32); err != nil {
		return err
	}
	if !m.layer && !m.cost && !m.aggr && !m.dec {
		return fmt.Errorf("exports neither strata_layer_spec (a layer), strata_aggregate (an aggregator), strata_decode (a decoder) nor strata_cost_io and strata_cost (a cost model)")
	}
	return nil
}

// instantiate starts a fresh anonymous instance of compiled in rt, running
// _initialize under ctx.
func (m *Module) instantiate(ctx context.Context, rt wazero.Runtime, compiled wazero.CompiledModule, out *outBuf) (api.Module, error) {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithStdout(out).
		WithStderr(out)
	return rt.InstantiateModule(ctx, compiled, cfg)
}

// definitionCall runs fn on a fresh instance in the deadline runtime and
// closes the instance afterwards.
func (m *Module) definitionCall(ctx context.Context, kind string, st *callState, fn func(ctx context.Context, inst api.Module) (string, error)) error {
	cctx, cancel := withGuestDeadline(context.WithValue(ctx, stateKey{}, st), m.rt.opts.Deadline)
	defer cancel()
	st.ctx, st.clock = cctx, cctx
	inst, err := m.instantiate(cctx, m.rt.def, m.compiled, st.out)
	if err != nil {
		var exit *sys.ExitError
		if !errors.As(err, &exit) && !strings.Contains(err.Error(), "function[_initialize] failed") {
			return fmt.Errorf("%s %q cannot be instantiated: %w", kind, m.name, err)
		}
		return callError(cctx, kind, m.name, "_initialize", err, st.out, m.rt.opts.Deadline, m.rt.opts.MemoryLimitPages)
	}
	defer inst.Close(context.Background())
	export, err := fn(cctx, inst)
	if err != nil && export != "" {
		return callError(cctx, kind, m.name, export, err, st.out, m.rt.opts.Deadline, m.rt.opts.MemoryLimitPages)
	}
	return err
}

func (m *Module) checkVersion(ctx context.Context) error {
	st := &callState{out: &outBuf{}}
	var v int32
	err := m.definitionCall(ctx, "module", st, func(ctx context.Context, inst api.Module) (string, error) {
		res, err := inst.ExportedFunction("strata_abi_version").Call(ctx)
		if err != nil {
			return "strata_abi_version", err
		}
		v = int32(uint32(res[0]))
		return "", nil
	})
	if err != nil {
		return err
	}
	if v != ABIVersion {
		return fmt.Errorf("module %q speaks strata ABI v%d, host supports v%d", m.name, v, ABIVersion)
	}
	return nil
}
