package tensor

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// refHalf is an independent reference for narrowing: every finite value of
// a 16-bit format, decoded by arithmetic (not by the code under test),
// sorted; a float32 rounds to the nearest of them, ties to the one with
// an even last bit, overflowing to ±Inf past the largest finite value
// plus half an ulp (IEEE 754's rule).
type refHalf struct {
	vals []float64
	bits []uint16
	max  float64 // the largest finite value
	ulp  float64 // its ulp
}

// halfValue decodes the bits of a 16-bit float with man mantissa bits
// (and 15-man exponent bits) with math.Ldexp; false for Inf and NaN.
func halfValue(h uint16, man int) (float64, bool) {
	expBits := 15 - man
	bias := 1<<(expBits-1) - 1
	exp, m := int(h>>man)&(1<<expBits-1), float64(h&(1<<man-1))
	v := 0.0
	switch exp {
	case 1<<expBits - 1:
		return 0, false
	case 0:
		v = math.Ldexp(m, 1-bias-man)
	default:
		v = math.Ldexp(1+m/float64(int(1)<<man), exp-bias)
	}
	if h&0x8000 != 0 {
		v = -v
	}
	return v, true
}

// f16Value decodes binary16 bits; bf16Value decodes bfloat16 bits.
func f16Value(h uint16) (float64, bool)  { return halfValue(h, 10) }
func bf16Value(h uint16) (float64, bool) { return halfValue(h, 7) }

func newRefHalf(dec func(uint16) (float64, bool)) *refHalf {
	r := &refHalf{}
	type pair struct {
		v float64
		b uint16
	}
	var ps []pair
	for h := 0; h < 1<<16; h++ {
		if v, ok := dec(uint16(h)); ok && h&0x8000 == 0 {
			ps = append(ps, pair{v, uint16(h)})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].v < ps[j].v })
	for _, p := range ps {
		r.vals, r.bits = append(r.vals, p.v), append(r.bits, p.b)
	}
	r.max = r.vals[len(r.vals)-1]
	r.ulp = r.max - r.vals[len(r.vals)-2]
	return r
}

// round returns the reference encoding of f (finite f only).
func (r *refHalf) round(f float32, inf uint16) uint16 {
	x := float64(f)
	sign := uint16(0)
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	if x >= r.max+r.ulp/2 {
		return sign | inf
	}
	i := sort.SearchFloat64s(r.vals, x) // vals[i] >= x
	if i == len(r.vals) {
		return sign | r.bits[i-1] // within half an ulp above the largest
	}
	if r.vals[i] == x {
		return sign | r.bits[i]
	}
	lo, hi := r.bits[i-1], r.bits[i]
	dlo, dhi := x-r.vals[i-1], r.vals[i]-x
	switch {
	case dlo < dhi:
		return sign | lo
	case dhi < dlo:
		return sign | hi
	case lo&1 == 0:
		return sign | lo
	}
	return sign | hi
}

func TestHalfRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name   string
		narrow func(float32) uint16
		widen  func(uint16) float32
		dec    func(uint16) (float64, bool)
	}{
		{"float16", F32ToF16, F16ToF32, f16Value},
		{"bfloat16", F32ToBF16, BF16ToF32, bf16Value},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Every 16-bit pattern widens to its value and narrows back to
			// itself (NaNs to a NaN).
			for h := 0; h < 1<<16; h++ {
				f := c.widen(uint16(h))
				want, finite := c.dec(uint16(h))
				switch {
				case finite && float64(f) != want:
					t.Fatalf("widen(%#04x) = %g, want %g", h, f, want)
				case finite && math.Signbit(float64(f)) != (h&0x8000 != 0):
					t.Fatalf("widen(%#04x) = %g has the wrong sign", h, f)
				}
				back := c.narrow(f)
				if f != f {
					if g := c.widen(back); g == g {
						t.Fatalf("NaN %#04x narrowed to %#04x, not a NaN", h, back)
					}
					continue
				}
				if back != uint16(h) {
					t.Fatalf("round trip of %#04x (%g) gave %#04x", h, f, back)
				}
			}
		})
	}
}

func TestHalfRounding(t *testing.T) {
	for _, c := range []struct {
		name   string
		narrow func(float32) uint16
		dec    func(uint16) (float64, bool)
		inf    uint16
	}{
		{"float16", F32ToF16, f16Value, 0x7c00},
		{"bfloat16", F32ToBF16, bf16Value, 0x7f80},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := newRefHalf(c.dec)
			check := func(f float32) {
				t.Helper()
				if want, got := ref.round(f, c.inf), c.narrow(f); got != want {
					t.Fatalf("narrow(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 200000 { // random bit patterns: every exponent
				b := rng.Uint32()
				if b&0x7f800000 == 0x7f800000 {
					continue
				}
				check(math.Float32frombits(b))
			}
			// Exact ties and their neighbours around every finite value,
			// subnormals, overflow, the smallest subnormal's half.
			for i := 0; i+1 < len(ref.vals); i += 7 {
				mid := (ref.vals[i] + ref.vals[i+1]) / 2
				for _, v := range []float64{mid, ref.vals[i], ref.vals[i+1]} {
					f := float32(v)
					check(f)
					check(-f)
					check(math.Nextafter32(f, 0))
					check(math.Nextafter32(f, float32(math.Inf(1))))
				}
			}
			for _, f := range []float32{0, float32(math.Copysign(0, -1)), 65504, 65519.99, 65520, 1e10, -1e10,
				math.MaxFloat32, math.SmallestNonzeroFloat32, 5.96e-8, 2.98e-8, 2.9802322e-08, 2.9802326e-08, 1e-40} {
				check(f)
				check(-f)
			}
		})
	}
}

func TestHalfSpecials(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	cases := []struct {
		name string
		got  uint16
		want uint16
	}{
		{"f16 +Inf", F32ToF16(inf), 0x7c00},
		{"f16 -Inf", F32ToF16(-inf), 0xfc00},
		{"f16 65520 overflows", F32ToF16(65520), 0x7c00},
		{"f16 65519 rounds down", F32ToF16(65519), 0x7bff},
		{"f16 -0", F32ToF16(float32(math.Copysign(0, -1))), 0x8000},
		{"f16 smallest subnormal", F32ToF16(float32(math.Ldexp(1, -24))), 0x0001},
		{"f16 half the smallest subnormal ties to 0", F32ToF16(float32(math.Ldexp(1, -25))), 0x0000},
		{"f16 1+2^-11 ties to even 1", F32ToF16(1 + float32(math.Ldexp(1, -11))), 0x3c00},
		{"f16 1+3·2^-11 ties to even", F32ToF16(1 + 3*float32(math.Ldexp(1, -11))), 0x3c02},
		{"bf16 +Inf", F32ToBF16(inf), 0x7f80},
		{"bf16 max float32 overflows", F32ToBF16(math.MaxFloat32), 0x7f80},
		{"bf16 1+2^-8 ties to even 1", F32ToBF16(1 + float32(math.Ldexp(1, -8))), 0x3f80},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %#04x, want %#04x", c.name, c.got, c.want)
		}
	}
	for _, h := range []uint16{F32ToF16(nan), F32ToF16(-nan), F32ToF16(math.Float32frombits(0x7f800001))} {
		if f := F16ToF32(h); f == f {
			t.Errorf("NaN narrowed to f16 %#04x, which widens to %g", h, f)
		}
	}
	for _, h := range []uint16{F32ToBF16(nan), F32ToBF16(math.Float32frombits(0x7f800001))} {
		if f := BF16ToF32(h); f == f {
			t.Errorf("NaN narrowed to bf16 %#04x, which widens to %g", h, f)
		}
	}
	if _, err := StorageDType("float8"); err == nil {
		t.Error("StorageDType accepted float8")
	}
}

func TestEncodeDecodeHalf(t *testing.T) {
	src := []float32{0, 1, -2.5, 1e-3, 3.14159, 65504}
	for _, dt := range []DType{Float16, BFloat16} {
		h := make([]uint16, len(src))
		EncodeHalf(dt, h, src)
		back := make([]float32, len(src))
		DecodeHalf(dt, back, h)
		for i, f := range src {
			if tol := 1.0 / 256; math.Abs(float64(back[i]-f)) > tol*math.Abs(float64(f)) {
				t.Errorf("%v: %g came back as %g", dt, f, back[i])
			}
		}
	}
}
