//go:build !unix

package graph

// dropPages does nothing where mapFile reads the file into memory: those
// pages hold the only copy.
func dropPages([]byte) {}
