package cache

import "math/bits"

// below returns a number in [0, n) from a splitmix64 stream (fully
// specified, so seeded rankings are stable across Go versions).
func below(s *uint64, n uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	hi, _ := bits.Mul64(z^(z>>31), n)
	return hi
}
