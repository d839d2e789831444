package backend

import "math"

// The dropout stream of DropoutMask, shared by every backend so that they
// draw the same masks: element i of the mask for seed is kept when
// Mix64(Mix64(seed) + (i+1)·0x9E3779B97F4A7C15) >> 11, a 53-bit integer k
// (the uniform k·2^-53), is at least DropoutThreshold(p).

// Mix64 is the splitmix64 finaliser.
func Mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// DropoutThreshold is the integer form of "uniform ≥ p": k·2^-53 ≥ p
// exactly when k ≥ ceil(p·2^53) (both scalings by 2^53 are exact).
func DropoutThreshold(p float64) uint64 {
	return uint64(math.Ceil(p * (1 << 53)))
}

// dropoutStep is the stream's step between elements.
const dropoutStep = 0x9E3779B97F4A7C15

// DropoutKept reports whether element i of the mask drawn from base
// (Mix64(seed), or a DropoutBaseAt) is kept at threshold thr
// (DropoutThreshold).
func DropoutKept(base, thr uint64, i int) bool {
	return Mix64(base+(uint64(i)+1)*dropoutStep)>>11 >= thr
}

// DropoutBaseAt is the stream base of seed moved on by offset elements:
// element i of a mask drawn from base DropoutBaseAt(seed, o) (a kernel
// that takes the base, as the cuda backend's) is element o+i of the mask
// for seed, so a contiguous part of a tensor can be masked on its own.
func DropoutBaseAt(seed uint64, offset int) uint64 {
	return Mix64(seed) + uint64(offset)*dropoutStep
}
