package hybrid

import (
	"path/filepath"
	"strconv"
	"strings"

	"strata/core/safefile"
)

// defaultLLC is the last-level cache assumed where the system does not
// say: 32 MiB, a server CPU's L3.
const defaultLLC = 32 << 20

// lastLevelCache returns the size in bytes of the largest cache of the
// first CPU as Linux lists it (/sys/devices/system/cpu/cpu0/cache), or
// defaultLLC where it is not listed.
func lastLevelCache() int64 {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	var best int64
	for _, d := range dirs {
		b, err := safefile.ReadFile(filepath.Join(d, "size"), 1<<16) // a sysfs attribute
		if err != nil {
			continue
		}
		if v := parseCacheSize(string(b)); v > best {
			best = v
		}
	}
	if best == 0 {
		return defaultLLC
	}
	return best
}

// parseCacheSize reads a sysfs cache size ("266240K", "32M", "512"), 0
// when it is not one.
func parseCacheSize(s string) int64 {
	s = strings.TrimSpace(s)
	unit := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		unit, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		unit, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		unit, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v > 1<<40/unit {
		return 0
	}
	return v * unit
}
