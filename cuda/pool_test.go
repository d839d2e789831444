package cuda

import (
	"errors"
	"testing"
)

// fakeDriver hands out addresses and refuses beyond its capacity.
type fakeDriver struct {
	next, inUse, capacity int64
	allocs, frees         int
	sizes                 map[uintptr]int64
}

func (d *fakeDriver) alloc(n int64) (uintptr, error) {
	if d.capacity > 0 && d.inUse+n > d.capacity {
		return 0, errors.New("out of memory")
	}
	d.next += n
	d.inUse += n
	d.allocs++
	if d.sizes == nil {
		d.sizes = map[uintptr]int64{}
	}
	d.sizes[uintptr(d.next)] = n
	return uintptr(d.next), nil
}

func (d *fakeDriver) free(p uintptr) error {
	d.frees++
	d.inUse -= d.sizes[p]
	delete(d.sizes, p)
	return nil
}

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{0, 0}, {1, 512}, {512, 512}, {513, 1024}, {1<<20 - 1, 1 << 20}, {1 << 20, 2 << 20}, {3 << 20, 4 << 20},
	} {
		if got := sizeClass(tc.in); got != tc.want {
			t.Errorf("sizeClass(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestPoolReusesBlocks(t *testing.T) {
	d := &fakeDriver{}
	p := newPool(0, d.alloc, d.free)
	// Two steps that allocate the same shapes: the second reaches the driver
	// no more.
	for step := range 2 {
		var got []uintptr
		var classes []int64
		for _, n := range []int64{100, 4000, 3 << 20} {
			ptr, c, err := p.get(n)
			if err != nil {
				t.Fatal(err)
			}
			got, classes = append(got, ptr), append(classes, c)
		}
		for i := range got {
			p.put(got[i], classes[i])
		}
		if d.allocs != 3 {
			t.Fatalf("step %d: %d driver allocations, want 3", step, d.allocs)
		}
	}
	s := p.Stats()
	if s.Hits != 3 || s.Cached != s.Reserved || s.Reserved != 512+4096+(4<<20) {
		t.Fatalf("stats %+v", s)
	}
}

func TestPoolTrimsOnOutOfMemory(t *testing.T) {
	tests := []struct {
		name             string
		capacity, limit  int64
		wantErr, wantLim bool
	}{
		{name: "driver", capacity: 8 << 20},
		{name: "limit", limit: 8 << 20},
		{name: "too big", capacity: 8 << 20, wantErr: true},
		{name: "too big for limit", limit: 8 << 20, wantErr: true, wantLim: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDriver{capacity: tc.capacity}
			p := newPool(tc.limit, d.alloc, d.free)
			ptr, c, err := p.get(6 << 20)
			if err != nil {
				t.Fatal(err)
			}
			p.put(ptr, c) // cached: 6 MiB of the 8
			n := int64(4 << 20)
			if tc.wantErr {
				n = 10 << 20
			}
			_, _, err = p.get(n)
			if tc.wantErr {
				if err == nil || errors.Is(err, errPoolLimit) != tc.wantLim {
					t.Fatalf("err = %v, want an error (limit: %v)", err, tc.wantLim)
				}
				return
			}
			if err != nil {
				t.Fatalf("get after trim: %v", err)
			}
			if s := p.Stats(); s.Trims != 1 || s.Cached != 0 || d.frees != 1 {
				t.Fatalf("stats %+v, frees %d", s, d.frees)
			}
		})
	}
}
