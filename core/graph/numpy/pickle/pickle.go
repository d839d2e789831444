// Package pickle is a restricted unpickler for the object arrays of a
// .npz file that holds pickled scipy.sparse matrices
// (numpy.savez(f, adj_matrix=csr_matrix)). It interprets pickle
// protocols 2 to 4 as data: the only globals it accepts are
// scipy.sparse's CSR/CSC classes and numpy's ndarray, dtype, _reconstruct
// and scalar, which it builds itself; any other GLOBAL or STACK_GLOBAL
// (os.system, builtins.eval...) is refused by name when it is read, so
// nothing a pickle names is ever called. The data of arrays and scalars
// is decoded by the caller's Decoder (the .npy readers, and their memory
// budget).
package pickle

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"strata/core/graph"
)

// global is an accepted class or function.
type global string

// accepted maps "module.name" to what it builds.
var accepted = map[string]global{
	"numpy.core.multiarray._reconstruct":  "reconstruct",
	"numpy._core.multiarray._reconstruct": "reconstruct",
	"numpy.core.multiarray.scalar":        "scalar",
	"numpy._core.multiarray.scalar":       "scalar",
	"numpy.ndarray":                       "ndarray",
	"numpy.dtype":                         "dtype",
	"scipy.sparse.csr.csr_matrix":         "csr",
	"scipy.sparse._csr.csr_matrix":        "csr",
	"scipy.sparse._csr.csr_array":         "csr",
	"scipy.sparse.csc.csc_matrix":         "csc",
	"scipy.sparse._csc.csc_matrix":        "csc",
	"scipy.sparse._csc.csc_array":         "csc",
}

// Values other than Go scalars (int64, float64, bool, string, []byte,
// nil) that Load returns.
type (
	// Tuple is a Python tuple.
	Tuple []any
	// List is a Python list.
	List struct{ Items []any }
	// Dict is a Python dict with string keys.
	Dict struct{ M map[string]any }
	// Array is a numpy ndarray: Data is what the Decoder made of its
	// bytes, or []any for an object array (Descr "|O").
	Array struct {
		Shape []int
		Descr string // the .npy descr: "<f4", "|b1", "|O"
		Data  any
	}
	// Sparse is a scipy.sparse matrix: Kind is "csr" or "csc", State its
	// pickled attributes (shape, indptr, indices, data).
	Sparse struct {
		Kind  string
		State map[string]any
	}
	mark  struct{}
	dtype struct{ descr, order string }
)

// Decoder turns the raw bytes of numpy arrays and scalars into values;
// the caller owns their types and the memory they may take.
type Decoder interface {
	// Array decodes the data of an ndarray of .npy descr and shape, its
	// bytes in Fortran (column-major) order when fortran.
	Array(descr string, shape []int, fortran bool, raw []byte) (any, error)
	// Scalar decodes a numpy scalar of .npy descr: an int64 or a float64.
	Scalar(descr string, raw []byte) (any, error)
}

// unpickler is the state of one unpickling.
type unpickler struct {
	b     []byte
	i     int
	stack []any
	memo  map[uint32]any
	dec   Decoder
}

// Load interprets the pickle b and returns its value, the data of its
// arrays and scalars decoded by dec.
func Load(b []byte, dec Decoder) (any, error) {
	u := &unpickler{b: b, memo: map[uint32]any{}, dec: dec}
	for {
		if u.i >= len(u.b) {
			return nil, fmt.Errorf("pickle ends at byte %d without STOP: %w", u.i, graph.ErrTruncated)
		}
		op := u.b[u.i]
		at := u.i
		u.i++
		if op == '.' {
			if len(u.stack) != 1 {
				return nil, fmt.Errorf("pickle: STOP with %d values on the stack, want 1: %w", len(u.stack), graph.ErrFormat)
			}
			return u.stack[0], nil
		}
		if err := u.step(op); err != nil {
			return nil, fmt.Errorf("pickle opcode %q at byte %d: %w", op, at, err)
		}
	}
}

// take returns the next n bytes.
func (u *unpickler) take(n int) ([]byte, error) {
	if n < 0 || n > len(u.b)-u.i {
		return nil, fmt.Errorf("needs %d bytes, %d remain: %w", n, len(u.b)-u.i, graph.ErrTruncated)
	}
	s := u.b[u.i : u.i+n]
	u.i += n
	return s, nil
}

// uint reads a little-endian unsigned integer of n bytes (1, 2, 4, 8).
func (u *unpickler) uint(n int) (uint64, error) {
	s, err := u.take(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for k := n - 1; k >= 0; k-- {
		v = v<<8 | uint64(s[k])
	}
	return v, nil
}

// line reads up to a newline (GLOBAL's module and name).
func (u *unpickler) line() (string, error) {
	j := strings.IndexByte(string(u.b[u.i:min(len(u.b), u.i+256)]), '\n')
	if j < 0 {
		return "", fmt.Errorf("no newline within 256 bytes: %w", graph.ErrFormat)
	}
	s := string(u.b[u.i : u.i+j])
	u.i += j + 1
	return s, nil
}

func (u *unpickler) push(v any) { u.stack = append(u.stack, v) }

func (u *unpickler) pop() (any, error) {
	if len(u.stack) == 0 {
		return nil, fmt.Errorf("stack underflow: %w", graph.ErrFormat)
	}
	v := u.stack[len(u.stack)-1]
	u.stack = u.stack[:len(u.stack)-1]
	if _, ok := v.(mark); ok {
		return nil, fmt.Errorf("a MARK where a value belongs: %w", graph.ErrFormat)
	}
	return v, nil
}

// popMark pops the values above the topmost MARK, and the MARK.
func (u *unpickler) popMark() ([]any, error) {
	for k := len(u.stack) - 1; k >= 0; k-- {
		if _, ok := u.stack[k].(mark); ok {
			vals := append([]any(nil), u.stack[k+1:]...)
			u.stack = u.stack[:k]
			return vals, nil
		}
	}
	return nil, fmt.Errorf("no MARK on the stack: %w", graph.ErrFormat)
}

// resolve resolves a GLOBAL or STACK_GLOBAL, refusing what is not
// accepted before anything else happens.
func resolve(module, name string) (global, error) {
	g, ok := accepted[module+"."+name]
	if !ok {
		return "", fmt.Errorf("refusing to load %s.%s: the pickle names a class or function outside scipy.sparse's CSR/CSC matrices and numpy arrays, which could run arbitrary code; re-save the arrays as plain numeric arrays (e.g. adj_data, adj_indices, adj_indptr, adj_shape): %w",
			module, name, graph.ErrFormat)
	}
	return g, nil
}

// step interprets one opcode.
func (u *unpickler) step(op byte) error {
	switch op {
	case 0x80: // PROTO
		v, err := u.uint(1)
		if err == nil && (v < 2 || v > 5) {
			err = fmt.Errorf("protocol %d is not supported (want 2 to 4): %w", v, graph.ErrVersion)
		}
		return err
	case 0x95: // FRAME
		_, err := u.uint(8)
		return err
	case '(':
		u.push(mark{})
	case ')':
		u.push(Tuple{})
	case ']':
		u.push(&List{})
	case '}':
		u.push(&Dict{M: map[string]any{}})
	case 'N':
		u.push(nil)
	case 0x88, 0x89: // NEWTRUE, NEWFALSE
		u.push(op == 0x88)
	case 't', 'l', 'd':
		vals, err := u.popMark()
		if err != nil {
			return err
		}
		switch op {
		case 't':
			u.push(Tuple(vals))
		case 'l':
			u.push(&List{Items: vals})
		default:
			d := &Dict{M: map[string]any{}}
			if err := d.set(vals); err != nil {
				return err
			}
			u.push(d)
		}
	case 0x85, 0x86, 0x87: // TUPLE1..3
		n := int(op - 0x84)
		if len(u.stack) < n {
			return fmt.Errorf("stack underflow: %w", graph.ErrFormat)
		}
		t := append(Tuple(nil), u.stack[len(u.stack)-n:]...)
		u.stack = u.stack[:len(u.stack)-n]
		u.push(t)
	default:
		return u.stepValue(op)
	}
	return nil
}

// stepValue interprets the opcodes of scalars, containers' items, the
// memo and object building.
func (u *unpickler) stepValue(op byte) error {
	switch op {
	case 'K', 'M', 'J': // BININT1, BININT2, BININT
		n := map[byte]int{'K': 1, 'M': 2, 'J': 4}[op]
		v, err := u.uint(n)
		if op == 'J' {
			u.push(int64(int32(uint32(v))))
		} else {
			u.push(int64(v))
		}
		return err
	case 0x8a: // LONG1
		n, err := u.uint(1)
		if err != nil {
			return err
		}
		s, err := u.take(int(n))
		if err != nil || n > 8 {
			return fmt.Errorf("a %d-byte long is not supported: %w", n, graph.ErrFormat)
		}
		var v int64
		for k := len(s) - 1; k >= 0; k-- {
			v = v<<8 | int64(s[k])
		}
		if n > 0 && n < 8 && s[n-1]&0x80 != 0 {
			v -= 1 << (8 * n)
		}
		u.push(v)
	case 'G': // BINFLOAT, big-endian
		s, err := u.take(8)
		if err != nil {
			return err
		}
		u.push(math.Float64frombits(binary.BigEndian.Uint64(s)))
	case 'X', 0x8c, 0x8d, 'C', 'B', 0x8e: // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8, SHORT_BINBYTES, BINBYTES, BINBYTES8
		n := map[byte]int{'X': 4, 0x8c: 1, 0x8d: 8, 'C': 1, 'B': 4, 0x8e: 8}[op]
		ln, err := u.uint(n)
		if err != nil {
			return err
		}
		s, err := u.take(int(min(ln, math.MaxInt32)))
		if err != nil {
			return err
		}
		if op == 'X' || op == 0x8c || op == 0x8d {
			u.push(string(s))
		} else {
			u.push(s)
		}
	case 'q', 'r', 0x94: // BINPUT, LONG_BINPUT, MEMOIZE
		if len(u.stack) == 0 {
			return fmt.Errorf("memo of an empty stack: %w", graph.ErrFormat)
		}
		key := uint64(len(u.memo))
		var err error
		if op != 0x94 {
			key, err = u.uint(map[byte]int{'q': 1, 'r': 4}[op])
		}
		u.memo[uint32(key)] = u.stack[len(u.stack)-1]
		return err
	case 'h', 'j': // BINGET, LONG_BINGET
		key, err := u.uint(map[byte]int{'h': 1, 'j': 4}[op])
		if err != nil {
			return err
		}
		v, ok := u.memo[uint32(key)]
		if !ok {
			return fmt.Errorf("memo key %d was never stored: %w", key, graph.ErrFormat)
		}
		u.push(v)
	case '0': // POP
		_, err := u.pop()
		return err
	case '2': // DUP
		if len(u.stack) == 0 {
			return fmt.Errorf("stack underflow: %w", graph.ErrFormat)
		}
		u.push(u.stack[len(u.stack)-1])
	default:
		return u.stepObject(op)
	}
	return nil
}

// stepObject interprets the opcodes that name globals, fill containers
// and build objects.
func (u *unpickler) stepObject(op byte) error {
	switch op {
	case 'c': // GLOBAL
		module, err := u.line()
		if err != nil {
			return err
		}
		name, err := u.line()
		if err != nil {
			return err
		}
		g, err := resolve(module, name)
		if err != nil {
			return err
		}
		u.push(g)
	case 0x93: // STACK_GLOBAL
		name, err1 := u.pop()
		module, err2 := u.pop()
		m, ok1 := module.(string)
		n, ok2 := name.(string)
		if err1 != nil || err2 != nil || !ok1 || !ok2 {
			return fmt.Errorf("STACK_GLOBAL wants two strings: %w", graph.ErrFormat)
		}
		g, err := resolve(m, n)
		if err != nil {
			return err
		}
		u.push(g)
	case 'a', 'e', 's', 'u': // APPEND, APPENDS, SETITEM, SETITEMS
		return u.fill(op)
	case 'R', 0x81, 0x92: // REDUCE, NEWOBJ, NEWOBJ_EX
		if op == 0x92 {
			if _, err := u.pop(); err != nil { // the keyword arguments
				return err
			}
		}
		args, err := u.pop()
		if err != nil {
			return err
		}
		fn, err := u.pop()
		if err != nil {
			return err
		}
		v, err := u.call(fn, args)
		if err != nil {
			return err
		}
		u.push(v)
	case 'b': // BUILD
		state, err := u.pop()
		if err != nil {
			return err
		}
		if len(u.stack) == 0 {
			return fmt.Errorf("BUILD without an object: %w", graph.ErrFormat)
		}
		return u.build(u.stack[len(u.stack)-1], state)
	default:
		return fmt.Errorf("opcode 0x%02x is not supported by the restricted unpickler (numpy arrays and scipy.sparse matrices of protocols 2 to 4 do not use it): %w", op, graph.ErrFormat)
	}
	return nil
}

// fill appends to a list or sets items of a dict.
func (u *unpickler) fill(op byte) error {
	var vals []any
	var err error
	switch op {
	case 'a':
		vals = make([]any, 1)
		vals[0], err = u.pop()
	case 's':
		vals = make([]any, 2)
		if vals[1], err = u.pop(); err == nil {
			vals[0], err = u.pop()
		}
	default:
		vals, err = u.popMark()
	}
	if err != nil {
		return err
	}
	if len(u.stack) == 0 {
		return fmt.Errorf("no container on the stack: %w", graph.ErrFormat)
	}
	switch c := u.stack[len(u.stack)-1].(type) {
	case *List:
		if op == 'a' || op == 'e' {
			c.Items = append(c.Items, vals...)
			return nil
		}
	case *Dict:
		if op == 's' || op == 'u' {
			return c.set(vals)
		}
	}
	return fmt.Errorf("opcode %q on a %T: %w", op, u.stack[len(u.stack)-1], graph.ErrFormat)
}

// set sets the key, value pairs of kv; keys must be strings.
func (d *Dict) set(kv []any) error {
	if len(kv)%2 != 0 {
		return fmt.Errorf("odd number of dict items: %w", graph.ErrFormat)
	}
	for k := 0; k < len(kv); k += 2 {
		key, ok := kv[k].(string)
		if !ok {
			return fmt.Errorf("dict key of type %T, want a string: %w", kv[k], graph.ErrFormat)
		}
		d.M[key] = kv[k+1]
	}
	return nil
}

// call builds what REDUCE or NEWOBJ makes of an accepted global.
func (u *unpickler) call(fn, args any) (any, error) {
	g, ok := fn.(global)
	a, okArgs := args.(Tuple)
	if !ok || !okArgs {
		return nil, fmt.Errorf("calls a %T with %T arguments; only numpy's and scipy.sparse's constructors are accepted: %w", fn, args, graph.ErrFormat)
	}
	switch {
	case g == "reconstruct" && len(a) == 3 && a[0] == global("ndarray"):
		return &Array{}, nil
	case g == "dtype" && len(a) >= 1:
		s, ok := a[0].(string)
		if !ok {
			return nil, fmt.Errorf("numpy.dtype of a %T: %w", a[0], graph.ErrFormat)
		}
		return &dtype{descr: s, order: "|"}, nil
	case g == "scalar" && len(a) == 2:
		return u.scalar(a[0], a[1])
	case (g == "csr" || g == "csc") && len(a) == 0:
		return &Sparse{Kind: string(g)}, nil
	}
	return nil, fmt.Errorf("%s with %d arguments is not how numpy or scipy pickle it: %w", g, len(a), graph.ErrFormat)
}

// build applies BUILD's state to obj.
func (u *unpickler) build(obj, state any) error {
	switch o := obj.(type) {
	case *dtype:
		if t, ok := state.(Tuple); ok && len(t) >= 2 {
			if s, ok := t[1].(string); ok {
				o.order = s
				return nil
			}
		}
	case *Sparse:
		if d, ok := state.(*Dict); ok {
			o.State = d.M
			return nil
		}
	case *Array:
		return u.buildArray(o, state)
	}
	return fmt.Errorf("BUILD of a %T with a %T: %w", obj, state, graph.ErrFormat)
}

// npyKey is the .npy descr of a pickled dtype ("<f4", "|b1").
func (d *dtype) npyKey() string {
	order := d.order
	if order == "=" {
		order = "<" // numpy pickles from little-endian hosts
	}
	return order + d.descr
}

// buildArray fills an ndarray from its pickled state (version, shape,
// dtype, fortran order, data: the raw bytes, or a list of objects).
func (u *unpickler) buildArray(o *Array, state any) error {
	t, ok := state.(Tuple)
	if !ok || len(t) != 5 {
		return fmt.Errorf("ndarray state is a %T, want (version, shape, dtype, fortran, data): %w", state, graph.ErrFormat)
	}
	shapeT, ok1 := t[1].(Tuple)
	dt, ok2 := t[2].(*dtype)
	fortran, ok3 := t[3].(bool)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("ndarray state holds %T, %T, %T, want a shape tuple, a dtype and a bool: %w", t[1], t[2], t[3], graph.ErrFormat)
	}
	count := int64(1)
	for _, v := range shapeT {
		d, ok := v.(int64)
		if !ok || d < 0 || d > math.MaxInt32 {
			return fmt.Errorf("ndarray shape %v is not a tuple of sizes: %w", shapeT, graph.ErrFormat)
		}
		if d > 0 && count > math.MaxInt64/d {
			return fmt.Errorf("ndarray shape %v has more elements than an int64 counts: %w", shapeT, graph.ErrRange)
		}
		count *= d
		o.Shape = append(o.Shape, int(d))
	}
	if strings.HasPrefix(dt.descr, "O") {
		l, ok := t[4].(*List)
		if !ok || int64(len(l.Items)) != count {
			return fmt.Errorf("object array of %d elements holds %T: %w", count, t[4], graph.ErrFormat)
		}
		o.Descr, o.Data = "|O", l.Items
		return nil
	}
	raw, ok := t[4].([]byte)
	if !ok {
		return fmt.Errorf("ndarray of shape %v holds %T, want its bytes: %w", o.Shape, t[4], graph.ErrFormat)
	}
	o.Descr = dt.npyKey()
	data, err := u.dec.Array(o.Descr, o.Shape, fortran, raw)
	if err != nil {
		return err
	}
	o.Data = data
	return nil
}

// scalar decodes numpy.core.multiarray.scalar(dtype, bytes): a numpy
// integer or float (a sparse matrix's shape may hold them).
func (u *unpickler) scalar(dt, raw any) (any, error) {
	d, ok1 := dt.(*dtype)
	b, ok2 := raw.([]byte)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("numpy scalar of %T and %T: %w", dt, raw, graph.ErrFormat)
	}
	return u.dec.Scalar(d.npyKey(), b)
}
