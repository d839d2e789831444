package models

import (
	"bytes"
	"fmt"
	"strings"
)

// metaPrefix starts the name of every custom section strata reads.
const metaPrefix = "strata."

// Meta keys a module may declare (`//strata:<key> <value>` in its
// sources).
const (
	// MetaDoc is the module's one-line doc.
	MetaDoc = "doc"
	// MetaOrderDependent, present, says that an aggregator's (or a
	// layer's) result depends on the order of a node's neighbours (an
	// LSTM over them in CSR order): the suites check it for determinism
	// instead of permutation invariance.
	MetaOrderDependent = "order-dependent"
	// MetaAliases lists, space-separated, other names users give the
	// module ("graphsage" for sage): naming one is refused with a
	// suggestion of the module (registry.ModuleInfo.Aliases).
	MetaAliases = "aliases"
	// MetaEdgeWeights, present, says that a layer reads the graph's edge
	// weights (a dataset's edge_weight.npy): its aggregations weight each
	// neighbour (docs/models.md). A dataset with weights is refused with a
	// layer that does not declare it, so no weight is silently ignored.
	MetaEdgeWeights = "edge-weights"
)

// maxSectionBytes bounds the declared size of one section (a module is at
// most MaxModuleBytes).
const maxSectionBytes = MaxModuleBytes

// Meta returns the declarations a WebAssembly module carries: every
// custom section named "strata.<key>", by key. It reads section headers
// only (no compilation), so listing every shipped module is cheap.
func Meta(b []byte) (map[string]string, error) {
	if len(b) < 8 || !bytes.Equal(b[:4], []byte("\x00asm")) {
		return nil, fmt.Errorf("not a WebAssembly module")
	}
	out := map[string]string{}
	for off := 8; off < len(b); {
		id := b[off]
		size, n, err := uleb(b[off+1:])
		if err != nil {
			return nil, fmt.Errorf("section at byte %d: %w", off, err)
		}
		start := off + 1 + n
		if size > maxSectionBytes || uint64(len(b)-start) < size {
			return nil, fmt.Errorf("section at byte %d: size %d runs past the module's %d bytes", off, size, len(b))
		}
		body := b[start : start+int(size)]
		off = start + int(size)
		if id != 0 {
			continue
		}
		nlen, n, err := uleb(body)
		if err != nil || uint64(len(body)-n) < nlen {
			return nil, fmt.Errorf("custom section at byte %d: bad name", start)
		}
		name := string(body[n : n+int(nlen)])
		if key, ok := strings.CutPrefix(name, metaPrefix); ok {
			out[key] = string(body[n+int(nlen):])
		}
	}
	return out, nil
}

// uleb decodes an unsigned LEB128 value of at most 32 bits (section
// sizes), returning it and the bytes it took.
func uleb(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < 5 && i < len(b); i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("truncated or overlong LEB128 size")
}

// Doc returns the one-line doc a module carries ("" when it has none or
// is not a WebAssembly module).
func Doc(b []byte) string {
	m, err := Meta(b)
	if err != nil {
		return ""
	}
	return m[MetaDoc]
}

// Aliases returns the aliases a module declares (MetaAliases), or nil.
func Aliases(b []byte) []string {
	m, err := Meta(b)
	if err != nil {
		return nil
	}
	return strings.Fields(m[MetaAliases])
}
