package tensor

import (
	"fmt"
	"math"
)

// The 16-bit storage floats of data.feature_dtype. Float16 is IEEE 754
// binary16 (1 sign, 5 exponent, 10 fraction bits: 3.3 significant digits,
// normal range 6.1e-5 .. 65504, subnormals down to 6.0e-8); BFloat16 is the
// top half of a float32 (8 exponent bits, 7 fraction bits: float32's range
// at 2.4 significant digits). Both narrow with round-to-nearest-even, as
// the F16C instruction VCVTPS2PH and PyTorch's .half()/.bfloat16() do:
// NaN stays a (quiet) NaN with its sign, ±Inf stays ±Inf, values beyond
// the largest finite half become ±Inf, and values below the smallest
// subnormal round to a signed zero. Widening is exact.

// StorageDType returns the dtype a data.feature_dtype value names:
// "float32", "float16" or "bfloat16".
func StorageDType(name string) (DType, error) {
	switch name {
	case "", "float32":
		return Float32, nil
	case "float16":
		return Float16, nil
	case "bfloat16":
		return BFloat16, nil
	}
	return 0, fmt.Errorf("unknown feature dtype %q (float32, float16 or bfloat16)", name)
}

// F32ToF16 narrows f to IEEE binary16 bits, rounding to nearest even.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man == 0 {
			return sign | 0x7c00 // ±Inf
		}
		return sign | 0x7e00 | uint16(man>>13) // quiet NaN, top payload bits kept
	}
	e := exp - 127 + 15 // the binary16 biased exponent
	if e >= 0x1f {
		return sign | 0x7c00 // beyond 65504 (before rounding): ±Inf
	}
	if e <= 0 { // a binary16 subnormal (or zero): m·2^-24
		if e < -10 {
			return sign // below half the smallest subnormal, or a float32 subnormal
		}
		m := man | 0x800000 // the implicit bit
		shift := uint(14 - e)
		h := m >> shift
		rem, half := m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && h&1 == 1 {
			h++ // may carry into the smallest normal: its encoding is the next integer
		}
		return sign | uint16(h)
	}
	h := uint16(e)<<10 | uint16(man>>13)
	if rem := man & 0x1fff; rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry into the exponent is the right encoding, 0x7c00 (Inf) included
	}
	return sign | h
}

// F16ToF32 widens IEEE binary16 bits to float32 exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for man&0x400 == 0 {
			man <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// F32ToBF16 narrows f to bfloat16 bits, rounding to nearest even.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep it a quiet NaN
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// BF16ToF32 widens bfloat16 bits to float32 exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// EncodeHalf narrows src into dst (same length) in dt, Float16 or
// BFloat16.
func EncodeHalf(dt DType, dst []uint16, src []float32) {
	conv := F32ToF16
	if dt == BFloat16 {
		conv = F32ToBF16
	}
	for i, f := range src[:len(dst)] {
		dst[i] = conv(f)
	}
}

// DecodeHalf widens src (dt: Float16 or BFloat16) into dst (same length).
func DecodeHalf(dt DType, dst []float32, src []uint16) {
	if dt == BFloat16 {
		for i, h := range src[:len(dst)] {
			dst[i] = BF16ToF32(h)
		}
		return
	}
	for i, h := range src[:len(dst)] {
		dst[i] = F16ToF32(h)
	}
}
