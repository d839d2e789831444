package wasm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"strata/core/ir"
)

// ABI identity. Breaking changes get a new import module (strata_v2) that a
// host can serve beside this one; adding imports is backward-compatible
// because a guest only imports what it uses.
const (
	ABIVersion   = 1
	ImportModule = "strata_v1"
)

// Guest-memory limits of the ABI layer. The builder enforces the IR limits
// (name length, rank, op count); these only bound what the host reads.
const (
	maxStringBytes = 64 << 10 // longest string the host reads
	maxLogBytes    = 4 << 10  // log and fail messages are truncated here
	maxLogLines    = 1000     // further log lines are dropped
	maxShapeRank   = 64       // longest shape the host reads; the builder rejects rank > ir.MaxRank
)

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
	f64 = api.ValueTypeF64
)

// callState is what one guest call sees through its context: the builder of
// the layer being recorded, the configuration, and what the guest printed.
type callState struct {
	b    *ir.Builder // nil for cost models
	cfg  Config
	read map[string]string // option -> the default the guest gave, as TOML ("1", "0.2", "\"mean\"")
	nops int32             // ops recorded so far, for "op #k" in ABI-level errors
	err  error             // first ABI-level or guest-declared error
	logs []string
	out  *outBuf
	// Aggregator calls (aggregate_with): the call's context, the module
	// resolver, the parameter-name prefix of the aggregator running
	// ("" in the layer itself), the nesting depth and the count so far.
	ctx     context.Context
	clock   *guestDeadline // the call's deadline, paused while resolve compiles
	resolve func(name string) (*Module, error)
	prefix  string
	depth   int
	naggr   int
}

type stateKey struct{}

// readKey records that the guest read option key with default def (the
// first default, when it reads a key twice).
func (st *callState) readKey(key, def string) {
	if _, seen := st.read[key]; !seen {
		st.read[key] = def
	}
}

// tomlFloat formats x as a TOML float (0.0, not 0).
func tomlFloat(x float64) string {
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	return s
}

func newLayerState(cfg Config, out *outBuf) *callState {
	return &callState{b: ir.NewBuilder(), cfg: cfg, read: map[string]string{}, out: out}
}

func stateOf(ctx context.Context) *callState {
	st, _ := ctx.Value(stateKey{}).(*callState)
	return st
}

// failf records an ABI-level error in the builder's "op #k kind: detail"
// form, unless an earlier error (ours or the builder's) already exists.
func (st *callState) failf(fn, format string, args ...any) {
	if st.err != nil || st.b.Err() != nil {
		return
	}
	st.err = fmt.Errorf("op #%d %s: %s", st.nops, fn, fmt.Sprintf(format, args...))
}

// firstErr returns the first error of the call.
func (st *callState) firstErr() error {
	if st.err != nil {
		return st.err
	}
	return st.b.Err()
}

// handle records a builder result and returns it for the guest.
func (st *callState) handle(h int32) uint64 {
	if h >= st.nops {
		st.nops = h + 1
	}
	return api.EncodeI32(h)
}

func memSize(m api.Module) uint32 {
	if mem := m.Memory(); mem != nil {
		return mem.Size()
	}
	return 0
}

// bytes reads a guest byte range, or records why it cannot.
func (st *callState) bytes(m api.Module, fn, what string, ptr, n uint32) ([]byte, bool) {
	mem := m.Memory()
	if mem == nil {
		st.failf(fn, "the module exports no memory to read %s from", what)
		return nil, false
	}
	b, ok := mem.Read(ptr, n)
	if !ok {
		st.failf(fn, "%s (ptr %#x, %d bytes) lies outside guest memory (%d bytes)", what, ptr, n, mem.Size())
		return nil, false
	}
	return b, true
}

// str reads a (ptr,len) string argument.
func (st *callState) str(m api.Module, fn, what string, ptr, n uint64) (string, bool) {
	p, l := uint32(ptr), uint32(n)
	if l > maxStringBytes {
		st.failf(fn, "%s is %d bytes, the host reads at most %d", what, l, maxStringBytes)
		return "", false
	}
	b, ok := st.bytes(m, fn, what, p, l)
	if !ok {
		return "", false
	}
	return string(b), true
}

// message reads a log or fail message, truncating long ones.
func (st *callState) message(m api.Module, ptr, n uint64) string {
	l := uint32(n)
	if l > maxLogBytes {
		l = maxLogBytes
	}
	mem := m.Memory()
	if mem == nil {
		return "<no memory>"
	}
	b, ok := mem.Read(uint32(ptr), l)
	if !ok {
		return fmt.Sprintf("<message at %#x (%d bytes) outside guest memory>", uint32(ptr), l)
	}
	return strings.ToValidUTF8(string(b), "?")
}

// shape reads a (ptr, rank) int64 array.
func (st *callState) shape(m api.Module, fn string, ptr, rank uint64) ([]int64, bool) {
	r := int32(uint32(rank))
	if r < 0 || r > maxShapeRank {
		st.failf(fn, "rank %d outside 1..%d", r, ir.MaxRank)
		return nil, false
	}
	b, ok := st.bytes(m, fn, "shape", uint32(ptr), uint32(r)*8)
	if !ok {
		return nil, false
	}
	s := make([]int64, r)
	for i := range s {
		s[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return s, true
}

func h32(v uint64) int32 { return int32(uint32(v)) }

var poison = api.EncodeI32(-1)

// hostFunc is one strata_v1 import.
type hostFunc struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
	// layer runs with the call's state; it is not called (and the import
	// returns poison, the default or nothing) outside a layer spec call.
	layer func(st *callState, m api.Module, s []uint64)
	// any runs in every call, with a nil state outside layer spec calls.
	any func(st *callState, m api.Module, s []uint64)
}

func (f *hostFunc) call(ctx context.Context, m api.Module, s []uint64) {
	st := stateOf(ctx)
	switch {
	case f.any != nil:
		f.any(st, m, s)
	case st == nil || st.b == nil:
		// Not recording a layer (a cost model called an op import).
		switch {
		case f.name == "cfg_i64" || f.name == "cfg_f64":
			// s[2] already holds the default, which is the result.
			s[0] = s[2]
		case len(f.results) > 0:
			s[0] = poison
		}
	default:
		f.layer(st, m, s)
	}
}

func (f *hostFunc) signature() string {
	return sigString(f.params, f.results)
}

func sigString(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		out := make([]string, len(ts))
		for i, t := range ts {
			out[i] = api.ValueTypeName(t)
		}
		return strings.Join(out, ", ")
	}
	return fmt.Sprintf("(%s) -> (%s)", names(params), names(results))
}

// Type lists for the table below. Strings are (ptr i32, len i32).
func vt(ts ...api.ValueType) []api.ValueType { return ts }

// hostFuncs is the strata_v1 import module: the functions below and the
// structural ops of the op table (opHostFuncs, generated). Every op import
// forwards to the call's ir.Builder, which does all shape checking and
// poison handling.
var hostFuncs = append(baseHostFuncs, opHostFuncs...)

var baseHostFuncs = []*hostFunc{
	{name: "cfg_i64", params: vt(i32, i32, i64), results: vt(i64), layer: func(st *callState, m api.Module, s []uint64) {
		key, ok := st.str(m, "cfg_i64", "key", s[0], s[1])
		def := int64(s[2])
		if !ok {
			s[0] = uint64(def)
			return
		}
		v, err := cfgInt(st.cfg, key, def)
		st.readKey(key, strconv.FormatInt(def, 10))
		if err != nil {
			st.failf("cfg_i64", "%v", err)
		}
		st.notString("cfg_i64", key)
		s[0] = uint64(v)
	}},
	{name: "cfg_f64", params: vt(i32, i32, f64), results: vt(f64), layer: func(st *callState, m api.Module, s []uint64) {
		key, ok := st.str(m, "cfg_f64", "key", s[0], s[1])
		def := api.DecodeF64(s[2])
		if !ok {
			s[0] = api.EncodeF64(def)
			return
		}
		st.readKey(key, tomlFloat(def))
		st.notString("cfg_f64", key)
		s[0] = api.EncodeF64(cfgFloat(st.cfg, key, def))
	}},
	// cfg_str(key, def, buf, cap) writes the string option key (or def)
	// into buf when it fits in cap bytes and returns its length.
	{name: "cfg_str", params: vt(i32, i32, i32, i32, i32, i32), results: vt(i32), layer: func(st *callState, m api.Module, s []uint64) {
		key, ok1 := st.str(m, "cfg_str", "key", s[0], s[1])
		def, ok2 := st.str(m, "cfg_str", "default", s[2], s[3])
		if !ok1 || !ok2 {
			s[0] = poison
			return
		}
		st.readKey(key, strconv.Quote(def))
		v, ok := st.cfg.Strings[key]
		if !ok {
			v = def
			if _, num := st.cfg.Ints[key]; num {
				st.failf("cfg_str", "option %q is a number; the module reads it as a string (quote it: %s = \"...\")", key, key)
			} else if _, num := st.cfg.Floats[key]; num {
				st.failf("cfg_str", "option %q is a number; the module reads it as a string (quote it: %s = \"...\")", key, key)
			}
		}
		if n := uint32(len(v)); n <= uint32(s[5]) && n > 0 {
			b, ok := st.bytes(m, "cfg_str", "destination", uint32(s[4]), n)
			if !ok {
				s[0] = poison
				return
			}
			copy(b, v)
		}
		s[0] = api.EncodeI32(int32(len(v)))
	}},
	{name: "input", params: vt(i32, i32, i64), results: vt(i32), layer: func(st *callState, m api.Module, s []uint64) {
		name, ok := st.str(m, "input", "name", s[0], s[1])
		if !ok {
			s[0] = poison
			return
		}
		s[0] = st.handle(st.b.Input(name, int64(s[2])))
	}},
	{name: "graph", params: vt(i32, i32), results: vt(i32), layer: func(st *callState, m api.Module, s []uint64) {
		name, ok := st.str(m, "graph", "name", s[0], s[1])
		if !ok {
			s[0] = poison
			return
		}
		s[0] = st.handle(st.b.Graph(name))
	}},
	{name: "param", params: vt(i32, i32, i32, i32, i32, i32), results: vt(i32), layer: paramFunc("param", (*ir.Builder).Param)},
	{name: "buffer", params: vt(i32, i32, i32, i32, i32, i32), results: vt(i32), layer: paramFunc("buffer", (*ir.Builder).Buffer)},
	{name: "binary", params: vt(i32, i32, i32, i32), results: vt(i32), layer: func(st *callState, m api.Module, s []uint64) {
		kind, ok := st.str(m, "binary", "kind", s[0], s[1])
		if !ok {
			s[0] = poison
			return
		}
		s[0] = st.handle(st.b.Binary(ir.Kind(kind), h32(s[2]), h32(s[3])))
	}},
	{name: "unary", params: vt(i32, i32, i32, f64), results: vt(i32), layer: func(st *callState, m api.Module, s []uint64) {
		kind, ok := st.str(m, "unary", "kind", s[0], s[1])
		if !ok {
			s[0] = poison
			return
		}
		s[0] = st.handle(st.b.Unary(ir.Kind(kind), h32(s[2]), api.DecodeF64(s[3])))
	}},
	// table(kind, g, v, alpha) records a gather, segment or degree op of
	// the op table (ir.Ops).
	{name: "table", params: vt(i32, i32, i32, i32, f64), results: vt(i32), layer: func(st *callState, m api.Module, s []uint64) {
		kind, ok := st.str(m, "table", "kind", s[0], s[1])
		if !ok {
			s[0] = poison
			return
		}
		s[0] = st.handle(st.b.Table(ir.Kind(kind), h32(s[2]), h32(s[3]), api.DecodeF64(s[4])))
	}},
	// aggregate_with(name, g, x) runs the aggregator module name (a
	// registered aggregator.* or a module file an option names) on (g, x),
	// recording its ops into this layer.
	{name: "aggregate_with", params: vt(i32, i32, i32, i32), results: vt(i32), layer: func(st *callState, m api.Module, s []uint64) {
		name, ok := st.str(m, "aggregate_with", "name", s[0], s[1])
		if !ok {
			s[0] = poison
			return
		}
		s[0] = api.EncodeI32(st.aggregate(name, h32(s[2]), h32(s[3])))
	}},
	{name: "output", params: vt(i32), results: vt(i32), layer: func(st *callState, m api.Module, s []uint64) {
		s[0] = api.EncodeI32(st.b.Output(h32(s[0])))
	}},
	// shape(h, dst *int64, cap) writes up to cap dims of value h and returns
	// its rank, or -1 for poison and bad handles (without recording an error).
	{name: "shape", params: vt(i32, i32, i32), results: vt(i32), layer: func(st *callState, m api.Module, s []uint64) {
		dims := st.b.Shape(h32(s[0]))
		if dims == nil {
			s[0] = poison
			return
		}
		n := min(len(dims), int(max(h32(s[2]), 0)))
		b, ok := st.bytes(m, "shape", "destination", uint32(s[1]), uint32(n)*8)
		if !ok {
			s[0] = poison
			return
		}
		for i := range n {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(dims[i]))
		}
		s[0] = api.EncodeI32(int32(len(dims)))
	}},
	// fail(msg) reports a guest-side error (a bad option, say); like a shape
	// error it poisons the spec and only the first error is kept.
	{name: "fail", params: vt(i32, i32), layer: func(st *callState, m api.Module, s []uint64) {
		msg := st.message(m, s[0], s[1])
		if st.err == nil && st.b.Err() == nil {
			st.err = errors.New(msg)
		}
	}},
	// log(msg) appends a line to the call's log and to the captured output.
	{name: "log", params: vt(i32, i32), any: func(st *callState, m api.Module, s []uint64) {
		if st == nil {
			return
		}
		msg := st.message(m, s[0], s[1])
		if len(st.logs) < maxLogLines {
			st.logs = append(st.logs, msg)
		}
		if st.out != nil {
			st.out.WriteString("log: " + msg + "\n")
		}
	}},
}

var hostFuncByName = func() map[string]*hostFunc {
	m := make(map[string]*hostFunc, len(hostFuncs))
	for _, f := range hostFuncs {
		m[f.name] = f
	}
	return m
}()

// ImportNames lists the functions of the strata_v1 import module.
func ImportNames() []string {
	names := make([]string, 0, len(hostFuncs))
	for _, f := range hostFuncs {
		names = append(names, f.name)
	}
	slices.Sort(names)
	return names
}

// checkImport validates one function import of a guest against the host.
func checkImport(module, name string, params, results []api.ValueType) error {
	switch {
	case module == "wasi_snapshot_preview1":
		return nil // resolved (or refused) by wazero's WASI module
	case module == ImportModule:
		f, ok := hostFuncByName[name]
		if !ok {
			return fmt.Errorf("imports %s.%s, which this host does not provide (%s has: %s)",
				module, name, ImportModule, strings.Join(ImportNames(), ", "))
		}
		if !slices.Equal(params, f.params) || !slices.Equal(results, f.results) {
			return fmt.Errorf("imports %s.%s with signature %s, but the host defines it as %s",
				module, name, sigString(params, results), f.signature())
		}
		return nil
	case strings.HasPrefix(module, "strata_v"):
		return fmt.Errorf("speaks strata ABI %s (imports %s.%s), host supports v%d",
			strings.TrimPrefix(module, "strata_"), module, name, ABIVersion)
	}
	return fmt.Errorf("imports %s.%s; a strata module may import only %s and wasi_snapshot_preview1",
		module, name, ImportModule)
}

// paramFunc is the host function "param" or "buffer": (name, shape,
// init) recorded by declare (Builder.Param or Builder.Buffer).
func paramFunc(fn string, declare func(*ir.Builder, string, []int64, string) int32) func(*callState, api.Module, []uint64) {
	return func(st *callState, m api.Module, s []uint64) {
		name, ok1 := st.str(m, fn, "name", s[0], s[1])
		shape, ok2 := st.shape(m, fn, s[2], s[3])
		init, ok3 := st.str(m, fn, "init", s[4], s[5])
		if !ok1 || !ok2 || !ok3 {
			s[0] = poison
			return
		}
		s[0] = st.handle(declare(st.b, st.prefix+name, shape, init))
	}
}
