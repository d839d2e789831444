package wasm

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"strata/core/ir"
)

// spec builds a layer module whose strata_layer_spec runs body after the
// imports named in imps (strata_v1 signatures) are declared; body gets the
// import indices by name.
func spec(version int32, imps []string, body func(m *wmod, f map[string]uint32) []byte) []byte {
	m := layerMod()
	idx := map[string]uint32{}
	for _, n := range imps {
		hf := hostFuncByName[n]
		idx[n] = m.imp(ImportModule, n, hf.params, hf.results)
	}
	m.abiVersion(version)
	m.fn("strata_layer_spec", nil, ts(tI32), nil, body(m, idx))
	return m.bytes()
}

func returns(v int32) func(*wmod, map[string]uint32) []byte {
	return func(*wmod, map[string]uint32) []byte { return i32c(v) }
}

// TestMalformedLoad covers modules Load must refuse, each with a message
// that says what is wrong.
func TestMalformedLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	cases := []struct {
		name string
		wasm []byte
		want string
	}{
		{"empty", nil, `module "empty" is not a WebAssembly binary`},
		{"garbage", garbage, `module "garbage" is not a WebAssembly binary (it starts with`},
		{"truncated", spec(1, nil, returns(0))[:30], `module "truncated" does not compile:`},
		{"textfile", []byte("(module (func))"), `is not a WebAssembly binary`},
		{"v2", spec(2, nil, returns(0)), `module "v2" speaks strata ABI v2, host supports v1`},
		{"v0", spec(0, nil, returns(0)), `module "v0" speaks strata ABI v0, host supports v1`},
		{"imports-v2", func() []byte {
			m := layerMod()
			m.imp("strata_v2", "matmul", ts(tI32, tI32), ts(tI32))
			m.abiVersion(2)
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `module "imports-v2" speaks strata ABI v2 (imports strata_v2.matmul), host supports v1`},
		{"unknown-import", func() []byte {
			m := layerMod()
			f := m.imp(ImportModule, "frobnicate", ts(tI32), ts(tI32))
			m.abiVersion(1)
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(1), call(f))
			return m.bytes()
		}(), `module "unknown-import" imports strata_v1.frobnicate, which this host does not provide (strata_v1 has: aggregate, aggregate_with, batchnorm, bias,`},
		{"wrong-signature", func() []byte {
			m := layerMod()
			f := m.imp(ImportModule, "matmul", ts(tI32), ts(tI32))
			m.abiVersion(1)
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(1), call(f))
			return m.bytes()
		}(), `imports strata_v1.matmul with signature (i32) -> (i32), but the host defines it as (i32, i32) -> (i32)`},
		{"env-import", func() []byte {
			m := layerMod()
			m.imp("env", "abort", nil, nil)
			m.abiVersion(1)
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `imports env.abort; a strata module may import only strata_v1 and wasi_snapshot_preview1`},
		{"no-memory", func() []byte {
			m := newMod().abiVersion(1)
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `does not export its linear memory as "memory"`},
		{"unexported-memory", func() []byte {
			m := newMod().memory(1, false).abiVersion(1)
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `does not export its linear memory as "memory"`},
		{"no-version", func() []byte {
			m := layerMod()
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `does not export strata_abi_version; is it a strata module?`},
		{"version-signature", func() []byte {
			m := layerMod()
			m.fn("strata_abi_version", nil, ts(tI64), nil, i64c(1))
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `exports strata_abi_version with signature () -> (i64), want () -> (i32)`},
		{"no-role", layerMod().abiVersion(1).bytes(), `exports neither strata_layer_spec (a layer), strata_aggregate (an aggregator), strata_decode (a decoder) nor strata_cost_io and strata_cost (a cost model)`},
		{"half-cost", func() []byte {
			m := layerMod().abiVersion(1)
			m.fn("strata_cost_io", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `exports only one of strata_cost_io and strata_cost`},
		{"command", func() []byte {
			m := layerMod().abiVersion(1)
			m.fn("_start", nil, nil, nil)
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `is a WASI command (it exports _start, not _initialize): build it as a reactor with -buildmode=c-shared`},
		{"huge-memory", func() []byte {
			m := newMod().memory(2000, true).abiVersion(1)
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `(the host's memory limit is 1024 pages)`},
		{"init-trap", func() []byte {
			m := layerMod().abiVersion(1)
			m.fn("_initialize", nil, nil, nil, opUnreachable)
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `module "init-trap": _initialize trapped: wasm error: unreachable`},
		{"init-loop", func() []byte {
			m := layerMod().abiVersion(1)
			m.fn("_initialize", nil, nil, nil, opLoopForever)
			m.fn("strata_layer_spec", nil, ts(tI32), nil, i32c(0))
			return m.bytes()
		}(), `module "init-loop": _initialize exceeded the 200ms deadline (infinite loop?)`},
	}
	rt := newRuntime(t, Options{Deadline: 200 * time.Millisecond})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := rt.Load(context.Background(), c.name, c.wasm)
			if err == nil {
				m.Close(context.Background())
			}
			mustContain(t, err, c.want)
		})
	}
}

// TestMalformedSpec covers modules that load but whose layer spec fails.
func TestMalformedSpec(t *testing.T) {
	badShape := func(m *wmod, f map[string]uint32) []byte {
		m.bytesAt(32, []byte{5, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0})
		return cat(
			m.str(0, "x"), i64c(4), call(f["input"]),
			m.str(8, "W"), i32c(32), i32c(2), m.str(16, "glorot"), call(f["param"]),
			call(f["matmul"]), call(f["output"]), opDrop, i32c(0))
	}
	cases := []struct {
		name string
		wasm []byte
		want string
	}{
		{"trap", spec(1, nil, func(*wmod, map[string]uint32) []byte { return opUnreachable }),
			`model "trap": strata_layer_spec trapped: wasm error: unreachable`},
		{"loop", spec(1, nil, func(*wmod, map[string]uint32) []byte { return cat(opLoopForever, i32c(0)) }),
			`model "loop": strata_layer_spec exceeded the 200ms deadline (infinite loop?)`},
		{"badshape", spec(1, []string{"input", "param", "matmul", "output"}, badShape),
			`model "badshape" layer spec: op #2 matmul: inner dims mismatch: a=[N,4] b=[5,3]`},
		{"string-out-of-bounds", spec(1, []string{"input", "output"}, func(m *wmod, f map[string]uint32) []byte {
			return cat(i32c(0xfff0), i32c(100), i64c(4), call(f["input"]), call(f["output"]), opDrop, i32c(0))
		}), `model "string-out-of-bounds" layer spec: op #0 input: name (ptr 0xfff0, 100 bytes) lies outside guest memory (65536 bytes)`},
		{"negative-length", spec(1, []string{"graph"}, func(m *wmod, f map[string]uint32) []byte {
			return cat(i32c(0), i32c(-1), call(f["graph"]), opDrop, i32c(0))
		}), `op #0 graph: name is 4294967295 bytes, the host reads at most 65536`},
		{"shape-out-of-bounds", spec(1, []string{"param"}, func(m *wmod, f map[string]uint32) []byte {
			return cat(m.str(0, "W"), i32c(65530), i32c(2), m.str(8, "zeros"), call(f["param"]), opDrop, i32c(0))
		}), `op #0 param: shape (ptr 0xfffa, 16 bytes) lies outside guest memory`},
		{"huge-rank", spec(1, []string{"param"}, func(m *wmod, f map[string]uint32) []byte {
			return cat(m.str(0, "W"), i32c(0), i32c(1000), m.str(8, "zeros"), call(f["param"]), opDrop, i32c(0))
		}), `op #0 param: rank 1000 outside 1..4`},
		{"shape-overflow", spec(1, []string{"param"}, func(m *wmod, f map[string]uint32) []byte {
			m.bytesAt(32, []byte{3, 0, 0, 0, 0, 0, 0, 0, 171, 170, 170, 170, 170, 170, 170, 42})
			return cat(m.str(0, "W"), i32c(32), i32c(2), m.str(8, "zeros"), call(f["param"]), opDrop, i32c(0))
		}), `op #0 param: "W": shape [3,3074457345618258603] has more than 2^63 elements, more than the limit of 268435456 per parameter`},
		{"shape-wraps-to-zero", spec(1, []string{"param"}, func(m *wmod, f map[string]uint32) []byte {
			m.bytesAt(32, []byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0})
			return cat(m.str(0, "W"), i32c(32), i32c(2), m.str(8, "zeros"), call(f["param"]), opDrop, i32c(0))
		}), `op #0 param: "W": shape [4294967296,4294967296] has more than 2^63 elements`},
		{"rank-5", spec(1, []string{"param"}, func(m *wmod, f map[string]uint32) []byte {
			return cat(m.str(0, "W"), i32c(64), i32c(5), m.str(8, "zeros"), call(f["param"]), opDrop, i32c(0))
		}), `op #0 param: "W": rank 5 outside 1..4`},
		{"bad-handle", spec(1, []string{"relu", "unary", "output"}[1:], func(m *wmod, f map[string]uint32) []byte {
			return cat(m.str(0, "relu"), i32c(7), f64c(0), call(f["unary"]), call(f["output"]), opDrop, i32c(0))
		}), `op #0 relu: argument 0: handle 7 does not name a recorded value`},
		{"unknown-unary", spec(1, []string{"input", "unary"}, func(m *wmod, f map[string]uint32) []byte {
			return cat(m.str(0, "softplus"), m.str(16, "x"), i64c(3), call(f["input"]), f64c(0), call(f["unary"]), opDrop, i32c(0))
		}), `op #1 softplus: not a unary op`},
		{"no-output", spec(1, []string{"input"}, func(m *wmod, f map[string]uint32) []byte {
			return cat(m.str(0, "x"), i64c(3), call(f["input"]), opDrop, i32c(0))
		}), `model "no-output" layer spec: layer recorded no output`},
		{"status", spec(1, nil, returns(3)), `model "status": strata_layer_spec returned status 3`},
		{"fail-after-poison", spec(1, []string{"input", "fail", "output"}, func(m *wmod, f map[string]uint32) []byte {
			return cat(m.str(0, "y"), i64c(3), call(f["input"]), m.str(8, "later"), call(f["fail"]), call(f["output"]), opDrop, i32c(0))
		}), `op #0 input: unknown input "y"`},
	}
	rt := newRuntime(t, Options{Deadline: 200 * time.Millisecond})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			m, err := rt.Load(ctx, c.name, c.wasm)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = m.LayerSpec(ctx, Config{})
			mustContain(t, err, c.want)
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v", d)
			}
			if strings.Contains(c.want, "trapped") || strings.Contains(c.want, "deadline") {
				var ce *CallError
				if !errors.As(err, &ce) {
					t.Errorf("%T is not a *CallError", err)
				}
			}
			// The module stays usable: a fresh instance per call.
			_, err2 := m.LayerSpec(ctx, Config{})
			mustContain(t, err2, c.want)
		})
	}
}

// TestGoGuestFailures runs a real Go guest that panics, runs out of memory,
// loops, records a bad shape, fails on purpose and prints.
func TestGoGuestFailures(t *testing.T) {
	ctx := context.Background()
	// Only the looping guest should meet the deadline: the others get a
	// generous one, so a loaded machine cannot turn their failure into a
	// timeout.
	load := func(deadline time.Duration) *Module {
		rt := newRuntime(t, Options{CacheDir: t.TempDir(), Deadline: deadline, MemoryLimitPages: 256})
		m, err := rt.Load(ctx, "misc", guest(t, "plugins/wasm/testdata/guests/misc"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m, looping := load(time.Minute), load(500*time.Millisecond)
	cases := []struct {
		mode int
		want string
	}{
		{1, `model "misc": strata_layer_spec trapped: wasm error: unreachable; guest stderr: panic: assignment to entry in nil map`},
		{2, `model "misc": strata_layer_spec trapped: wasm error: unreachable; guest stderr: fatal error: out of memory (memory limit 256 pages = 16 MiB)`},
		{3, `model "misc": strata_layer_spec exceeded the 500ms deadline (infinite loop?)`},
		{4, `model "misc" layer spec: op #2 matmul: inner dims mismatch: a=[N,4] b=[5,3]`},
		{5, `model "misc" layer spec: option mode=5 is not supported`},
	}
	for _, c := range cases {
		mod := m
		if c.mode == 3 {
			mod = looping
		}
		_, err := mod.LayerSpec(ctx, cfg("mode", c.mode))
		mustContain(t, err, c.want)
		var ce *CallError
		if errors.As(err, &ce) && !strings.Contains(ce.Error(), "deadline") && ce.Stderr == "" {
			t.Errorf("mode %d: no stderr captured", c.mode)
		}
	}
	s, err := m.LayerSpec(ctx, cfg("mode", 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Graph.Ops) != 1 || len(s.Log) != 0 {
		t.Errorf("mode 0: %v %v", s.Graph, s.Log)
	}
}

func TestCanceledContext(t *testing.T) {
	rt := newRuntime(t, Options{})
	m, err := rt.Load(context.Background(), "loop", spec(1, nil, func(*wmod, map[string]uint32) []byte { return cat(opLoopForever, i32c(0)) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = m.LayerSpec(ctx, Config{})
	mustContain(t, err, `model "loop": strata_layer_spec was canceled`)
}

// TestAggregatorFailures runs the misc guest as a layer that asks for an
// aggregator by name (mode 7) and as that aggregator: an unknown name, a
// wrong output shape, recursion, a panic and a module that is not an
// aggregator are errors naming the aggregator.
func TestAggregatorFailures(t *testing.T) {
	ctx := context.Background()
	code := guest(t, "plugins/wasm/testdata/guests/misc")
	m := loadGuest(t, "plugins/wasm/testdata/guests/misc")
	layer := func(aggr string, aggrMode int) Config {
		c := cfg("mode", 7)
		c.SetString("aggr", aggr)
		c.SetInt("aggr_mode", int64(aggrMode))
		c.Modules = map[string][]byte{"misc.wasm": code, "notaggr.wasm": guest(t, "models/costmodels/roofline")}
		return c
	}
	cases := []struct {
		aggr string
		mode int
		want string
	}{
		{"nope", 0, `op #2 aggregate_with: unknown aggregator "nope" (registered: `},
		{"misc.wasm", 1, `op #3 aggregate_with: aggregator "misc.wasm" returned a value of shape [E_adj,4]; an aggregator must return node rows [N,C]`},
		{"misc.wasm", 2, `aggregators nested more than 4 deep`},
		{"misc.wasm", 3, `aggregator "misc.wasm": strata_aggregate trapped: wasm error: unreachable; guest stderr: panic: aggregator boom`},
		{"notaggr.wasm", 0, `module "notaggr" does not export strata_aggregate`},
	}
	for _, c := range cases {
		_, err := m.LayerSpec(ctx, layer(c.aggr, c.mode))
		mustContain(t, err, c.want)
	}
	s, err := m.LayerSpec(ctx, layer("misc.wasm", 0))
	if err != nil {
		t.Fatal(err)
	}
	if out := s.Graph.Ops[s.Graph.Outputs[0]]; out.Kind != ir.OpSegmentSum {
		t.Fatalf("the layer's output is %s, want the aggregator's segment_sum", out.Kind)
	}
	if !slices.Contains(s.KeysRead, "aggr_mode") {
		t.Fatalf("keys read %v lack the aggregator's option", s.KeysRead)
	}
}
