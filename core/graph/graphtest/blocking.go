package graphtest

import (
	"io/fs"
	"strings"
	"sync"

	"strata/core/graph"
	"strata/core/registry"
)

// BlockingPrefix starts the specs of the blocking test formats: a load of
// "blocking-test:<name>" waits until its test releases it, so a test of
// cancellation can tell a load abandoned on its context from one that
// finished, without timing it.
const BlockingPrefix = "blocking-test:"

// BlockedLoad is one load of the format "format.blocking-test-<name>":
// Started is closed when the loader starts, Done when it returns (after
// Release).
type BlockedLoad struct {
	Spec          string
	Started, Done chan struct{}
	release       chan struct{}
	once          sync.Once
}

// blockingFormat is the format of one name; each Blocking call gives it
// a new load (a test run with -count=N calls it N times).
type blockingFormat struct {
	spec string
	mu   sync.Mutex
	load *BlockedLoad
}

// Blocking registers the blocking format of name (once per name and
// process) and returns its next load: open b.Spec, and the loader waits
// until b.Release. A test that uses it releases it when it ends.
func Blocking(name string) *BlockedLoad {
	id := "format.blocking-test-" + name
	f, err := registry.New[*blockingFormat](id)
	if err != nil {
		f = &blockingFormat{spec: BlockingPrefix + name}
		registry.Register(f)
	}
	b := &BlockedLoad{Spec: f.spec, Started: make(chan struct{}), Done: make(chan struct{}), release: make(chan struct{})}
	f.mu.Lock()
	f.load = b
	f.mu.Unlock()
	return b
}

// Release lets the loader return.
func (b *BlockedLoad) Release() { b.once.Do(func() { close(b.release) }) }

// StrataModule implements registry.Module.
func (b *blockingFormat) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "format.blocking-test-" + strings.TrimPrefix(b.spec, BlockingPrefix), New: func() registry.Module { return b },
		Doc: "test only: a load that waits until its test releases it"}
}

// Detect implements graph.Format.
func (b *blockingFormat) Detect(spec string, _ fs.FileInfo) int {
	if spec == b.spec {
		return graph.DetectPrefix
	}
	return 0
}

// Supports implements graph.Format.
func (b *blockingFormat) Supports() graph.Support {
	return graph.Support{Spec: b.spec + " (tests)", GraphOnly: true}
}

// Open implements graph.Format: it reports the start, waits for the
// release, then returns a graph of two nodes.
func (f *blockingFormat) Open(string, graph.LoadOptions) (*graph.Dataset, error) {
	f.mu.Lock()
	b := f.load
	f.mu.Unlock()
	close(b.Started)
	<-b.release
	close(b.Done)
	return &graph.Dataset{Name: "blocked", NumNodes: 2, Graph: graph.FromEdges(2, [][2]int64{{0, 1}, {1, 0}})}, nil
}
