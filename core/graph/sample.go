package graph

// RandomNodes draws each of the n nodes with probability frac from a
// seeded stream (splitmix64) and returns the drawn ids ascending: a
// synthetic training split for graphs that have none.
func RandomNodes(n int, frac float64, seed uint64) []int32 {
	var out []int32
	s := seed ^ 0x6a09e667f3bcc909
	for v := 0; v < n; v++ {
		s += 0x9e3779b97f4a7c15
		z := (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		if float64(z>>11)/(1<<53) < frac {
			out = append(out, int32(v))
		}
	}
	return out
}
