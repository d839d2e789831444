package numpy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// npyFile encodes a .npy file of format version major with the given
// header fields and raw data bytes.
func npyFile(major byte, descr string, fortran bool, shape []int, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	fo := "False"
	if fortran {
		fo = "True"
	}
	return npyRaw(major, fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, fo, tuple), data)
}

// npyRaw encodes a .npy file with a literal header dictionary, padded like
// numpy does to a multiple of 64 bytes.
func npyRaw(major byte, header string, data []byte) []byte {
	pre := 10
	if major >= 2 {
		pre = 12
	}
	hlen := len(header) + 1
	hlen += (64 - (pre+hlen)%64) % 64
	header += strings.Repeat(" ", hlen-len(header)-1) + "\n"
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.WriteByte(major)
	b.WriteByte(0)
	if major >= 2 {
		binary.Write(&b, binary.LittleEndian, uint32(hlen))
	} else {
		binary.Write(&b, binary.LittleEndian, uint16(hlen))
	}
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

// leBytes returns the little-endian bytes of a slice of fixed-size values.
func leBytes(v any) []byte {
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// npyOf encodes a 1-version .npy file holding v (a []float32, []float64,
// []int32, []int64 or []bool) with the given shape.
func npyOf(v any, shape ...int) []byte {
	descr := map[string]string{"[]float32": "<f4", "[]float64": "<f8", "[]int32": "<i4", "[]int64": "<i8", "[]bool": "|b1"}[fmt.Sprintf("%T", v)]
	return npyFile(1, descr, false, shape, leBytes(v))
}
