//go:build mpi

package mpi

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"strata/core/comm"
)

// TestUnderMPI checks the collectives on the ranks mpirun started (make
// test-mpi runs this binary with 2 and 4 ranks); alone it skips.
func TestUnderMPI(t *testing.T) {
	if _, _, ok := comm.Launched(os.Getenv); !ok {
		t.Skip("not started by mpirun (make test-mpi)")
	}
	ctx := context.Background()
	c, err := comm.Join(ctx, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n, me := c.Size(), c.Rank()
	send := make([][]byte, n)
	for j := range send {
		send[j] = []byte(fmt.Sprintf("%d->%d", me, j))
	}
	recv, err := c.AllToAllV(ctx, "test", send)
	if err != nil {
		t.Fatal(err)
	}
	for j, b := range recv {
		if want := fmt.Sprintf("%d->%d", j, me); string(b) != want {
			t.Fatalf("rank %d got %q from %d, want %q", me, b, j, want)
		}
	}
	// All-reduce: every rank holds the rank-order sum, bit for bit.
	vals := func(r int) []float32 {
		v := make([]float32, 1001)
		for i := range v {
			v[i] = float32(i*(r+1)) * 1.1e-3
		}
		return v
	}
	want := vals(0)
	for r := 1; r < n; r++ {
		for i, x := range vals(r) {
			want[i] += x
		}
	}
	got := vals(me)
	if err := comm.AllReduce(ctx, c, "g", got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rank %d: all-reduce differs from the rank-order sum", me)
	}
	buf := make([]byte, 3)
	if me == n-1 {
		copy(buf, "abc")
	}
	if err := c.Broadcast(ctx, "b", n-1, buf); err != nil || string(buf) != "abc" {
		t.Fatalf("rank %d: broadcast %q, %v", me, buf, err)
	}
	if err := c.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Sent()["test"] == 0 && n > 1 {
		t.Fatal("no bytes counted")
	}
}
