package cuda

import (
	"errors"
	"math/rand/v2"
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

// roundingSlack bounds what the size classes add to any set of requests,
// and a request one byte over a large class reaches it.
func TestRoundingSlack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int64{1, 511, 512, 513, largeFrom - 1, largeFrom, largeFrom + 1, largeClass, largeClass + 1, 3*largeClass + 7}
	for range 200 {
		switch rng.IntN(3) {
		case 0:
			sizes = append(sizes, 1+rng.Int64N(largeFrom))
		case 1:
			sizes = append(sizes, largeFrom+rng.Int64N(8*largeClass))
		default:
			sizes = append(sizes, 1+rng.Int64N(4096))
		}
	}
	for _, set := range [][]int64{sizes[:1], sizes[:4], sizes[4:10], sizes, sizes[10:]} {
		var bytes, held int64
		for _, n := range set {
			bytes += n
			held += sizeClass(n)
		}
		if got := held - bytes; got > roundingSlack(bytes, int64(len(set))) {
			t.Errorf("%d requests of %d bytes in all hold %d more, above the bound %d", len(set), bytes, got, roundingSlack(bytes, int64(len(set))))
		}
	}
	if got := sizeClass(largeClass+1) - (largeClass + 1); got != roundingSlack(largeClass+1, 1) {
		t.Errorf("a request of largeClass+1 gains %d, the bound is %d", got, roundingSlack(largeClass+1, 1))
	}
	if roundingSlack(0, 0) != 0 {
		t.Errorf("no request gains %d", roundingSlack(0, 0))
	}
}
