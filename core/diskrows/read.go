package diskrows

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"strata/core/metrics"
)

// run is rows [first, first+count) of the file, read into buf.
type run struct {
	first, count int32
	buf          []float32
}

// read fills the missed rows of out: sorted by node, adjacent rows
// coalesced into one positional read, the reads spread over t.readers
// goroutines. It counts the misses, reads and bytes.
func (t *Tier) read(misses []miss, out []float32) error {
	if len(misses) == 0 {
		return nil
	}
	slices.SortFunc(misses, func(a, b miss) int { return cmp.Compare(a.node, b.node) })
	var runs []run
	for _, m := range misses {
		if k := len(runs) - 1; k >= 0 && runs[k].first+runs[k].count-1 == m.node {
			continue // a repeat of the row just added
		} else if k >= 0 && runs[k].first+runs[k].count == m.node {
			runs[k].count++
			continue
		}
		runs = append(runs, run{first: m.node, count: 1})
	}
	dev0, devOK := metrics.IOCounter("read_bytes")
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(t.readers, len(runs)) {
		wg.Go(func() {
			for i := range next {
				errs[i] = t.readRun(&runs[i])
			}
		})
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	if dev1, ok := metrics.IOCounter("read_bytes"); ok && devOK {
		t.st.DeviceBytes += dev1 - dev0
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	r := 0
	for _, m := range misses {
		for m.node >= runs[r].first+runs[r].count {
			r++
		}
		k := int(m.node-runs[r].first) * t.dim
		copy(out[int(m.pos)*t.dim:(int(m.pos)+1)*t.dim], runs[r].buf[k:k+t.dim])
		t.st.Misses++
	}
	for _, rn := range runs {
		t.st.Bytes += int64(rn.count) * t.rowBytes
	}
	t.st.Reads += int64(len(runs))
	return nil
}

// readRun reads one run with a positional read.
func (t *Tier) readRun(rn *run) error {
	rn.buf = make([]float32, int(rn.count)*t.dim)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&rn.buf[0])), len(rn.buf)*4)
	if _, err := t.f.ReadAt(b, t.off+int64(rn.first)*t.rowBytes); err != nil {
		return fmt.Errorf("disk tier: reading rows %d..%d: %w", rn.first, rn.first+rn.count, err)
	}
	return nil
}
