package backend

import "math"

// The dropout stream of DropoutMask, shared by every backend so that they
// draw the same masks. Element (r, c) of an R×C mask drawn from seed with
// row keys K (an Int64 tensor of R keys, or nil for K[r] = r) has the
// stream index i = K[r]·C + c, and is kept when
// Mix64(Mix64(seed) + (i+1)·0x9E3779B97F4A7C15) >> 11, a 53-bit integer k
// (the uniform k·2^-53), is at least DropoutThreshold(p).
//
// The keys make a mask a function of what a row is rather than of where
// it sits: the engine keys a node-valued dropout by the rows' global node
// ids and an edge-valued one by EdgeKey of their endpoints, so a row
// draws the same mask in the whole graph, a chunk, a micro-batch, a rank
// or a device (docs/decisions.md, "Dropout streams keyed by global ids").
// A mask over the whole graph's rows in order (keys nil) is element i of
// the flat stream, as it was before keys existed.

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
	return DropoutKeptAt(base, thr, uint64(i))
}

// DropoutKeptAt is DropoutKept at a 64-bit stream index: the index
// K·C + c of a keyed row wraps modulo 2^64, as the kernels' unsigned
// arithmetic does.
func DropoutKeptAt(base, thr, i uint64) bool {
	return Mix64(base+(i+1)*dropoutStep)>>11 >= thr
}

// DropoutIndex is the stream index of element (r, c) of a mask of cols
// columns whose row r has key k (r itself when the mask has no keys).
func DropoutIndex(k uint64, cols, c int) uint64 {
	return k*uint64(cols) + uint64(c)
}

// DropoutBaseAt is the stream base of seed moved on by offset elements:
// element i of a mask drawn from base DropoutBaseAt(seed, o) (a kernel
// that takes the base, as the cuda backend's) is element o+i of the mask
// for seed, so a contiguous part of a tensor can be masked on its own.
func DropoutBaseAt(seed uint64, offset int) uint64 {
	return Mix64(seed) + uint64(offset)*dropoutStep
}

// EdgeKey is the row key of an edge-valued mask's row: a hash of the
// global ids of the edge's destination and source, so that an edge keeps
// its mask in any block, chunk or rank that holds it. Parallel edges
// share a key (and so a mask); a node's keys (its id) and the edges'
// live in different masks, never compared.
func EdgeKey(dst, src int64) uint64 {
	return Mix64(uint64(dst)*0xD1B54A32D192ED03 ^ Mix64(uint64(src)+0x632BE59BD9B4E019))
}
