package wasm

import (
	"encoding/binary"
	"math"
)

// A minimal WebAssembly binary encoder for hand-made test modules.

const (
	tI32 byte = 0x7f
	tI64 byte = 0x7e
	tF64 byte = 0x7c
)

type wfunc struct {
	typ    uint32
	locals []byte // one local per entry
	body   []byte
}

type wmod struct {
	types   [][2][]byte
	imports [][3]any // module, name, type
	funcs   []wfunc
	memMin  int64 // -1: no memory
	memExp  bool
	exports []wexport
	data    []wdata
	sealed  bool
}

type wexport struct {
	name string
	kind byte
	idx  uint32
}

type wdata struct {
	off uint32
	b   []byte
}

func newMod() *wmod { return &wmod{memMin: -1} }

func (m *wmod) typ(params, results []byte) uint32 {
	for i, t := range m.types {
		if string(t[0]) == string(params) && string(t[1]) == string(results) {
			return uint32(i)
		}
	}
	m.types = append(m.types, [2][]byte{params, results})
	return uint32(len(m.types) - 1)
}

// imp declares a function import and returns its function index. Imports
// must come before functions.
func (m *wmod) imp(mod, name string, params, results []byte) uint32 {
	if len(m.funcs) > 0 {
		panic("imports after functions")
	}
	m.imports = append(m.imports, [3]any{mod, name, m.typ(params, results)})
	return uint32(len(m.imports) - 1)
}

// fn defines a function, exported as name unless name is "".
func (m *wmod) fn(name string, params, results, locals []byte, body ...[]byte) uint32 {
	var b []byte
	for _, p := range body {
		b = append(b, p...)
	}
	m.funcs = append(m.funcs, wfunc{typ: m.typ(params, results), locals: locals, body: b})
	idx := uint32(len(m.imports) + len(m.funcs) - 1)
	if name != "" {
		m.exports = append(m.exports, wexport{name, 0, idx})
	}
	return idx
}

// memory defines (and exports as "memory" when export) one memory.
func (m *wmod) memory(min int64, export bool) *wmod {
	m.memMin, m.memExp = min, export
	return m
}

func (m *wmod) bytesAt(off uint32, b []byte) { m.data = append(m.data, wdata{off, b}) }

// str places s at off and returns the (ptr, len) push instructions.
func (m *wmod) str(off uint32, s string) []byte {
	m.bytesAt(off, []byte(s))
	return cat(i32c(int32(off)), i32c(int32(len(s))))
}

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if v == 0 {
			return b
		}
	}
}

func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		done := v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0
		if !done {
			c |= 0x80
		}
		b = append(b, c)
		if done {
			return b
		}
	}
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func vec(n int, items ...[]byte) []byte { return cat(append([][]byte{uleb(uint64(n))}, items...)...) }
func name(s string) []byte              { return cat(uleb(uint64(len(s))), []byte(s)) }

// Instructions.
func i32c(v int32) []byte { return cat([]byte{0x41}, sleb(int64(v))) }
func i64c(v int64) []byte { return cat([]byte{0x42}, sleb(v)) }
func f64c(v float64) []byte {
	b := make([]byte, 9)
	b[0] = 0x44
	binary.LittleEndian.PutUint64(b[1:], math.Float64bits(v))
	return b
}
func call(idx uint32) []byte     { return cat([]byte{0x10}, uleb(uint64(idx))) }
func localGet(i uint32) []byte   { return cat([]byte{0x20}, uleb(uint64(i))) }
func f64Load(off uint32) []byte  { return cat([]byte{0x2b, 0x03}, uleb(uint64(off))) }
func f64Store(off uint32) []byte { return cat([]byte{0x39, 0x03}, uleb(uint64(off))) }

var (
	opDrop        = []byte{0x1a}
	opUnreachable = []byte{0x00}
	opLoopForever = []byte{0x03, 0x40, 0x0c, 0x00, 0x0b} // loop br 0 end
	opF64Gt       = []byte{0x64}
	opIf          = []byte{0x04, 0x40}
	opEnd         = []byte{0x0b}
	opMemGrow     = []byte{0x40, 0x00}
)

func section(id byte, body []byte) []byte { return cat([]byte{id}, uleb(uint64(len(body))), body) }

func (m *wmod) bytes() []byte {
	out := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	var items [][]byte
	for _, t := range m.types {
		items = append(items, cat([]byte{0x60}, vec(len(t[0]), t[0]), vec(len(t[1]), t[1])))
	}
	out = append(out, section(1, vec(len(items), items...))...)
	if len(m.imports) > 0 {
		items = items[:0]
		for _, im := range m.imports {
			items = append(items, cat(name(im[0].(string)), name(im[1].(string)), []byte{0}, uleb(uint64(im[2].(uint32)))))
		}
		out = append(out, section(2, vec(len(items), items...))...)
	}
	items = items[:0]
	for _, f := range m.funcs {
		items = append(items, uleb(uint64(f.typ)))
	}
	out = append(out, section(3, vec(len(items), items...))...)
	if m.memMin >= 0 {
		out = append(out, section(5, vec(1, cat([]byte{0}, uleb(uint64(m.memMin)))))...)
	}
	items = items[:0]
	for _, e := range m.exports {
		items = append(items, cat(name(e.name), []byte{e.kind}, uleb(uint64(e.idx))))
	}
	if m.memMin >= 0 && m.memExp {
		items = append(items, cat(name("memory"), []byte{2}, uleb(0)))
	}
	out = append(out, section(7, vec(len(items), items...))...)
	items = items[:0]
	for _, f := range m.funcs {
		var locals []byte
		if len(f.locals) > 0 {
			var decls [][]byte
			for _, l := range f.locals {
				decls = append(decls, []byte{1, l})
			}
			locals = vec(len(decls), decls...)
		} else {
			locals = vec(0)
		}
		body := cat(locals, f.body, opEnd)
		items = append(items, cat(uleb(uint64(len(body))), body))
	}
	out = append(out, section(10, vec(len(items), items...))...)
	if len(m.data) > 0 {
		items = items[:0]
		for _, d := range m.data {
			items = append(items, cat([]byte{0}, i32c(int32(d.off)), opEnd, vec(len(d.b)), d.b))
		}
		out = append(out, section(11, vec(len(items), items...))...)
	}
	return out
}

// layerMod returns a module with memory (1 page), strata_abi_version
// returning version, and room for imports; add strata_layer_spec with fn.
func layerMod() *wmod { return newMod().memory(1, true) }

func (m *wmod) abiVersion(v int32) *wmod {
	m.fn("strata_abi_version", nil, []byte{tI32}, nil, i32c(v))
	return m
}

// sig helpers
func ts(t ...byte) []byte { return t }
