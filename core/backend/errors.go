package backend

import (
	"fmt"

	"strata/core/tensor"
)

// OutOfMemoryError is returned by any backend when an allocation (a
// tensor, a graph, or a kernel's scratch) would exceed a tier's capacity.
// Callers match it with errors.As.
type OutOfMemoryError struct {
	// Backend names the backend that ran out ("cpu", "sim", ...); it
	// prefixes the message when set.
	Backend                string
	Tier                   tensor.Tier
	What                   string
	Bytes, InUse, Capacity int64
}

func (e *OutOfMemoryError) Error() string {
	prefix := ""
	if e.Backend != "" {
		prefix = e.Backend + ": "
	}
	return fmt.Sprintf("%s%s out of memory: %s needs %s with %s of %s in use; split the work (more micro-batches, smaller batches) or give the device more memory (devices.memory_bytes)",
		prefix, e.Tier, e.What, mib(e.Bytes), mib(e.InUse), mib(e.Capacity))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
