package wasm

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
)

// Pool shares runtimes and compiled modules between the loads of one
// phase of a process that loads the same modules many times: validating
// every run of an experiment, gathering every layer's options. A Host with
// a Pool compiles (or reads from the cache, decodes and validates) each
// module once per Options and name instead of once per load; every call
// into a module still runs on a fresh instance, as without a pool. What a
// Pool loaded stays loaded until Close, so give it to short phases, not to
// training.
type Pool struct {
	mu     sync.Mutex
	rts    map[Options]*Runtime
	mods   map[poolKey]*Module
	closed bool
}

// poolKey names a module of a pool: its runtime's options, the name it
// was loaded under (its errors name it) and its bytes.
type poolKey struct {
	opts Options
	name string
	sum  [sha256.Size]byte
}

// errPoolClosed is returned by loads after Close.
var errPoolClosed = errors.New("wasm: module pool is closed")

// NewPool returns an empty pool; Close releases what it loads.
func NewPool() *Pool {
	return &Pool{rts: map[Options]*Runtime{}, mods: map[poolKey]*Module{}}
}

// load returns the pool's module of name and code under opts, loading it
// into the pool's runtime of opts the first time.
func (p *Pool) load(ctx context.Context, opts Options, name string, code []byte) (*Module, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPoolClosed
	}
	key := poolKey{opts: opts, name: name, sum: sha256.Sum256(code)}
	if m, ok := p.mods[key]; ok {
		return m, nil
	}
	rt, ok := p.rts[opts]
	if !ok {
		var err error
		if rt, err = NewRuntime(ctx, opts); err != nil {
			return nil, err
		}
		p.rts[opts] = rt
	}
	m, err := rt.Load(ctx, name, code)
	if err != nil {
		return nil, err
	}
	p.mods[key] = m
	return m, nil
}

// Close releases every runtime of the pool and the modules in them; loads
// after it fail. Closing twice is a no-op.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, rt := range p.rts {
		errs = append(errs, rt.Close(ctx))
	}
	p.rts, p.mods = nil, nil
	return errors.Join(errs...)
}
