package synth

import (
	"math"
	mbits "math/bits"
)

// RNG streams of the generator, so every part draws independent numbers.
const (
	streamEdges = iota + 1
	streamPerm
	streamProjection
	streamCentroids
	streamFeatures
	streamSplits
	streamIntra // community stand-ins: edges inside a community
	streamInter // and between communities
)

// rng is a SplitMix64 generator: tiny, fast and good enough for synthetic
// graphs; every (seed, stream, index) triple gets an independent sequence.
type rng struct{ s uint64 }

// newRNG returns the generator of one stream.
func newRNG(seed, stream, index uint64) rng { return rng{s: mix3(seed, stream, index)} }

// mix64 is the SplitMix64 finaliser.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// mix3 hashes three words into one.
func mix3(a, b, c uint64) uint64 {
	return mix64(mix64(mix64(a+0x9e3779b97f4a7c15)^b+0x632be59bd9b4e019) ^ c + 0x85ebca6b)
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// below returns a uniform integer in [0, n).
func (r *rng) below(n uint64) uint64 {
	hi, _ := mulHi(r.next(), n)
	return hi
}

// mulHi returns the high and low words of a*b.
func mulHi(a, b uint64) (uint64, uint64) {
	const mask = 1<<32 - 1
	a0, a1 := a&mask, a>>32
	b0, b1 := b&mask, b>>32
	w0 := a0 * b0
	t := a1*b0 + w0>>32
	w1, w2 := t&mask, t>>32
	w1 += a0 * b1
	return a1*b1 + w2 + w1>>32, a * b
}

// normal returns a standard normal deviate (Box-Muller).
func (r *rng) normal() float64 {
	u1 := (float64(r.next()>>11) + 0.5) / (1 << 53)
	u2 := float64(r.next()>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// fastNormal returns an approximately standard normal deviate: the sum of
// four uniform 16-bit values, centred and scaled to unit variance (an
// Irwin-Hall approximation, exact in mean and variance, bounded by ±3.46).
func (r *rng) fastNormal() float32 {
	w := r.next()
	s := w&0xffff + w>>16&0xffff + w>>32&0xffff + w>>48
	// Each term is uniform on [0, 65535]: mean 32767.5, variance ~ 65536²/12,
	// so the sum has standard deviation 65536/sqrt(3).
	return (float32(s) - 4*32767.5) * (1.7320508 / 65536)
}

// idPerm is a keyed bijection of [0, 2^bits): odd multiplications and
// xor-shifts modulo 2^bits, each invertible. It relabels generated nodes
// without a permutation table (whose random reads would dominate the
// generator's time).
type idPerm struct {
	mask, k1, k2, k3 uint64
	s1, s2           uint
}

// newIDPerm derives the permutation of scale-bit ids from the seed.
func newIDPerm(seed uint64, bits int) idPerm {
	r := newRNG(seed, streamPerm, 0)
	return idPerm{
		mask: 1<<uint(bits) - 1,
		k1:   r.next() | 1, k2: r.next() | 1, k3: r.next(),
		s1: uint(bits+1) / 2, s2: uint(bits+2) / 3,
	}
}

// apply maps an id to its permuted id.
func (p idPerm) apply(x uint64) uint64 {
	x = x * p.k1 & p.mask
	x ^= x >> p.s1
	x = (x*p.k2 + p.k3) & p.mask
	x ^= x >> p.s2
	x = x * p.k1 & p.mask
	x ^= x >> p.s1
	return x
}

// cyclePerm is a keyed bijection of [0, n) for any n: idPerm on the next
// power of two, applied again while the image falls outside [0, n)
// (cycle walking; fewer than two steps on average).
type cyclePerm struct {
	p idPerm
	n uint64
}

func newCyclePerm(seed, stream uint64, n int) cyclePerm {
	bits := max(1, 64-mbits.LeadingZeros64(uint64(n-1)))
	return cyclePerm{p: newIDPerm(mix3(seed, stream, 0), bits), n: uint64(n)}
}

func (c cyclePerm) apply(x uint64) uint64 {
	for x = c.p.apply(x); x >= c.n; x = c.p.apply(x) {
	}
	return x
}
