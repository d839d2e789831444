package wasm

import (
	"context"
	"testing"
	"time"
)

// FuzzHostABI calls the strata_v1 host functions input, param and output
// from a guest with fuzzed pointers, lengths, ranks, widths and guest
// memory: the host must answer with an error (or a graph), never panic or
// allocate what a shape merely claims.
func FuzzHostABI(f *testing.F) {
	f.Add([]byte("x\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00glorot"), int32(0), int32(1), int32(8), int32(2), int64(4))
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0x2a}, int32(0), int32(1), int32(0), int32(2), int64(1))
	f.Add([]byte{}, int32(-1), int32(-1), int32(65530), int32(4), int64(-1))
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}, int32(0), int32(0), int32(0), int32(2), int64(1<<40))
	rt := newRuntime(f, Options{Deadline: time.Second})
	f.Fuzz(func(t *testing.T, mem []byte, namePtr, nameLen, shapePtr, rank int32, cols int64) {
		if len(mem) > 60000 {
			mem = mem[:60000]
		}
		wasmBytes := spec(1, []string{"input", "param", "output"}, func(m *wmod, fn map[string]uint32) []byte {
			m.bytesAt(0, mem)
			return cat(
				i32c(namePtr), i32c(nameLen), i64c(cols), call(fn["input"]), opDrop,
				i32c(namePtr), i32c(nameLen), i32c(shapePtr), i32c(rank), i32c(namePtr), i32c(nameLen), call(fn["param"]),
				call(fn["output"]), opDrop, i32c(0))
		})
		ctx := context.Background()
		m, err := rt.Load(ctx, "fuzz", wasmBytes)
		if err != nil {
			t.Fatalf("the fuzz module does not load: %v", err)
		}
		defer m.Close(ctx)
		_, _ = m.LayerSpec(ctx, Config{})
	})
}
