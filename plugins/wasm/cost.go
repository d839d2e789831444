package wasm

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tetratelabs/wazero/api"
)

// Cost-model I/O block. strata_cost_io() returns the guest address of
//
//	struct { Version uint32; NIn uint32; In [16]float64; Out [4]float64 }
//
// (little-endian, no padding, 168 bytes). The guest sets Version to
// CostIOVersion. For each prediction the host writes NIn and In[:NIn],
// zeroes the rest of In and Out, calls strata_cost(op) and reads Out.
// Status codes returned by strata_cost: 0 ok, 1 unknown op, 2 bad inputs.
const (
	CostIOVersion = 1
	CostInputs    = 16
	CostOutputs   = 4
	costIOSize    = 8 + 8*CostInputs + 8*CostOutputs
	costOutOff    = 8 + 8*CostInputs
)

// Status codes of strata_cost.
const (
	CostOK         = 0
	CostUnknownOp  = 1
	CostBadInputs  = 2
	costDryRunOps  = 16 // ops 0..15 are exercised by the validation run
	costDryRunSize = 1  // every input is 1 in the validation run
)

// CostModel is a long-lived instance of a cost-model module in the fast
// runtime (no per-call deadline; ~0.1 µs per Predict). It was validated by
// a timed dry run when created. It is NOT safe for concurrent use: create
// one per goroutine. After a trap the instance is discarded and the next
// Predict starts a fresh one.
type CostModel struct {
	m     *Module
	ctx   context.Context
	st    *callState
	inst  api.Module
	fn    api.Function
	addr  uint32
	stack []uint64
}

// CostModel validates the module's cost role with a timed dry run (every op
// code 0..15 with all inputs 1, in the deadline runtime) and returns a
// ready instance.
func (m *Module) CostModel(ctx context.Context) (*CostModel, error) {
	if !m.cost {
		return nil, fmt.Errorf("cost model %q is not a cost model (it does not export strata_cost_io and strata_cost)", m.name)
	}
	if err := m.costDryRun(ctx); err != nil {
		return nil, err
	}
	m.fastMu.Lock()
	if m.fastCompiled == nil {
		c, err := m.rt.compile(ctx, m.rt.fast, m.name, m.wasm)
		if err != nil {
			m.fastMu.Unlock()
			return nil, fmt.Errorf("cost model %q does not compile: %w", m.name, err)
		}
		m.fastCompiled = c
	}
	m.fastMu.Unlock()
	st := &callState{out: &outBuf{}}
	c := &CostModel{m: m, st: st, ctx: context.WithValue(context.Background(), stateKey{}, st), stack: make([]uint64, 1)}
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// costIO calls strata_cost_io and checks the block it points to.
func costIO(ctx context.Context, name string, inst api.Module) (uint32, string, error) {
	res, err := inst.ExportedFunction("strata_cost_io").Call(ctx)
	if err != nil {
		return 0, "strata_cost_io", err
	}
	addr := uint32(res[0])
	if _, ok := inst.Memory().Read(addr, costIOSize); !ok {
		return 0, "", fmt.Errorf("cost model %q: strata_cost_io returned %#x, but the %d-byte I/O block does not fit in guest memory (%d bytes)",
			name, addr, costIOSize, inst.Memory().Size())
	}
	if v, _ := inst.Memory().ReadUint32Le(addr); v != CostIOVersion {
		return 0, "", fmt.Errorf("cost model %q: I/O block version %d, host supports %d", name, v, CostIOVersion)
	}
	return addr, "", nil
}

func (m *Module) costDryRun(ctx context.Context) error {
	st := &callState{out: &outBuf{}}
	return m.definitionCall(ctx, "cost model", st, func(ctx context.Context, inst api.Module) (string, error) {
		addr, export, err := costIO(ctx, m.name, inst)
		if err != nil {
			return export, err
		}
		fn := inst.ExportedFunction("strata_cost")
		in := make([]float64, CostInputs)
		for i := range in {
			in[i] = costDryRunSize
		}
		stack := make([]uint64, 1)
		for op := int32(0); op < costDryRunOps; op++ {
			buf, ok := inst.Memory().Read(addr, costIOSize)
			if !ok {
				return "", fmt.Errorf("cost model %q: the I/O block left guest memory", m.name)
			}
			writeCostIn(buf, in)
			stack[0] = api.EncodeI32(op)
			if err := fn.CallWithStack(ctx, stack); err != nil {
				return fmt.Sprintf("strata_cost(op %d) in its validation run", op), err
			}
		}
		return "", nil
	})
}

func writeCostIn(buf []byte, in []float64) {
	binary.LittleEndian.PutUint32(buf[4:], uint32(len(in)))
	for i, v := range in {
		binary.LittleEndian.PutUint64(buf[8+8*i:], math.Float64bits(v))
	}
	clear(buf[8+8*len(in) : costIOSize])
}

func (c *CostModel) start(ctx context.Context) error {
	c.st.out.Reset()
	inst, err := c.m.instantiate(ctx, c.m.rt.fast, c.m.fastCompiled, c.st.out)
	if err != nil {
		return fmt.Errorf("cost model %q cannot be instantiated: %w", c.m.name, err)
	}
	addr, export, err := costIO(c.ctx, c.m.name, inst)
	if err != nil {
		inst.Close(context.Background())
		if export != "" {
			return callError(c.ctx, "cost model", c.m.name, export, err, c.st.out, 0, c.m.rt.opts.MemoryLimitPages)
		}
		return err
	}
	c.inst, c.addr, c.fn = inst, addr, inst.ExportedFunction("strata_cost")
	return nil
}

// Predict runs strata_cost(op) on inputs in (at most 16) and returns the
// module's four outputs. The roofline model documents its op codes and
// which input and output slots it uses.
func (c *CostModel) Predict(op int32, in []float64) (out [CostOutputs]float64, err error) {
	if len(in) > CostInputs {
		return out, fmt.Errorf("cost model %q: %d inputs, at most %d", c.m.name, len(in), CostInputs)
	}
	if c.inst == nil {
		if err := c.start(c.ctx); err != nil {
			return out, err
		}
	}
	buf, ok := c.inst.Memory().Read(c.addr, costIOSize)
	if !ok {
		c.discard()
		return out, fmt.Errorf("cost model %q: the I/O block left guest memory", c.m.name)
	}
	writeCostIn(buf, in)
	c.stack[0] = api.EncodeI32(op)
	if err := c.fn.CallWithStack(c.ctx, c.stack); err != nil {
		err = callError(c.ctx, "cost model", c.m.name, fmt.Sprintf("strata_cost(op %d)", op), err, c.st.out, 0, c.m.rt.opts.MemoryLimitPages)
		c.discard()
		return out, err
	}
	switch status := int32(uint32(c.stack[0])); status {
	case CostOK:
	case CostUnknownOp:
		return out, fmt.Errorf("cost model %q: unknown op %d", c.m.name, op)
	case CostBadInputs:
		return out, fmt.Errorf("cost model %q: op %d: invalid inputs %v", c.m.name, op, in)
	default:
		return out, fmt.Errorf("cost model %q: op %d: status %d", c.m.name, op, status)
	}
	// Memory may have grown during the call; take the view again.
	if buf, ok = c.inst.Memory().Read(c.addr+costOutOff, 8*CostOutputs); !ok {
		c.discard()
		return out, fmt.Errorf("cost model %q: the I/O block left guest memory", c.m.name)
	}
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
	}
	return out, nil
}

// Log returns the lines the cost model logged since its instance started.
func (c *CostModel) Log() []string { return c.st.logs }

func (c *CostModel) discard() {
	if c.inst != nil {
		c.inst.Close(context.Background())
		c.inst, c.fn = nil, nil
	}
}

// Close releases the instance.
func (c *CostModel) Close() error {
	c.discard()
	return nil
}
