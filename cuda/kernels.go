//go:build cuda

package cuda

import (
	_ "embed"
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/cu"
)

// ptx is kernels/kernels.cu compiled for compute_80 (make ptx); the driver
// JIT-compiles it for the GPU at hand on first load.
//
//go:embed kernels/kernels.ptx
var ptx string

// Launch configuration: 256 threads per block and at most maxBlocks
// blocks; the kernels are grid-stride loops, so any size fits.
const (
	blockSize = 256
	maxBlocks = 1 << 16
)

// fn returns a kernel of the module, looked up once.
func (b *Backend) fn(name string) (cu.Function, error) {
	b.fnMu.Lock()
	defer b.fnMu.Unlock()
	if f, ok := b.fns[name]; ok {
		return f, nil
	}
	f, err := b.mod.Function(name)
	if err != nil {
		return f, fmt.Errorf("cuda: kernel %s is not in the embedded PTX (run make ptx): %w", name, err)
	}
	b.fns[name] = f
	return f, nil
}

// launch queues kernel name over n work items. Arguments are uintptr
// (device addresses), int, int64, uint64, float64 or bool, each passed as
// the kernel's 8-byte parameter.
func (b *Backend) launch(name string, n int64, args ...any) error {
	if n <= 0 {
		return nil
	}
	f, err := b.fn(name)
	if err != nil {
		return err
	}
	vals := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case uintptr:
			vals[i] = uint64(v)
		case int:
			vals[i] = uint64(int64(v))
		case int64:
			vals[i] = uint64(v)
		case uint64:
			vals[i] = v
		case float64:
			vals[i] = math.Float64bits(v)
		case bool:
			if v {
				vals[i] = 1
			}
		default:
			return fmt.Errorf("cuda: kernel %s: argument %d has type %T", name, i, a)
		}
		params[i] = unsafe.Pointer(&vals[i])
	}
	blocks := min((n+blockSize-1)/blockSize, maxBlocks)
	if err := f.Launch(int(blocks), 1, 1, blockSize, 1, 1, 0, b.stream, params); err != nil {
		return fmt.Errorf("cuda: launching %s over %d items: %w", name, n, err)
	}
	return nil
}

// checked runs queue, which launches kernels that flag bad indices in
// b.errBuf, and reports the first flagged position (0-based) as an error
// built by bad.
func (b *Backend) checked(queue func(errBuf uintptr) error, bad func(pos int64) error) error {
	b.errMu.Lock()
	defer b.errMu.Unlock()
	if err := cu.MemsetD32Async(cu.DevicePtr(b.errBuf), 0, 1, b.stream); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if err := queue(b.errBuf); err != nil {
		return err
	}
	var flag int32
	if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&flag), cu.DevicePtr(b.errBuf), 4, b.stream); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if err := b.stream.Synchronize(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if flag != 0 {
		return bad(int64(flag) - 1)
	}
	return nil
}
