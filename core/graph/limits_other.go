//go:build !linux

package graph

// physicalMemory returns 0: unknown on this platform.
func physicalMemory() int64 { return 0 }
