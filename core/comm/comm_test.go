package comm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// runRanks runs f on every rank of an in-process group of n and returns
// the first error.
func runRanks(n int, f func(c Comm) error) error {
	ranks := NewLocal(n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range ranks {
		wg.Go(func() { errs[r] = f(c) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func TestAllToAllV(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			err := runRanks(n, func(c Comm) error {
				send := make([][]byte, n)
				for j := range send {
					send[j] = []byte(strings.Repeat(fmt.Sprint(c.Rank()), j+1)) // rank r sends j+1 copies of "r" to j
				}
				for round := 0; round < 3; round++ {
					recv, err := c.AllToAllV(context.Background(), "test", send)
					if err != nil {
						return err
					}
					for j, b := range recv {
						if want := strings.Repeat(fmt.Sprint(j), c.Rank()+1); string(b) != want {
							return fmt.Errorf("rank %d round %d got %q from %d, want %q", c.Rank(), round, b, j, want)
						}
					}
				}
				// sent to others: 3 rounds of sum over j != rank of (j+1) bytes
				want := int64(0)
				for j := 0; j < n; j++ {
					if j != c.Rank() {
						want += 3 * int64(j+1)
					}
				}
				if got := c.Sent()["test"]; got != want {
					return fmt.Errorf("rank %d counted %d bytes, want %d", c.Rank(), got, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAllReduceDeterministic: every rank gets the sum in rank order,
// bit for bit, for lengths that do and do not divide by the rank count.
func TestAllReduceDeterministic(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		for _, length := range []int{0, 1, 5, 1000} {
			vals := make([][]float32, n)
			rng := rand.New(rand.NewPCG(uint64(n), uint64(length)))
			for r := range vals {
				vals[r] = make([]float32, length)
				for i := range vals[r] {
					vals[r][i] = float32(rng.NormFloat64() * 1e3)
				}
			}
			want := slices.Clone(vals[0])
			for r := 1; r < n; r++ {
				for i := range want {
					want[i] += vals[r][i]
				}
			}
			for rep := 0; rep < 3; rep++ {
				got := make([][]float32, n)
				err := runRanks(n, func(c Comm) error {
					buf := slices.Clone(vals[c.Rank()])
					if c.Rank()%2 == 1 {
						time.Sleep(time.Millisecond) // arrive late
					}
					err := AllReduce(context.Background(), c, "g", buf)
					got[c.Rank()] = buf
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				for r := range got {
					if !slices.Equal(got[r], want) {
						t.Fatalf("n=%d len=%d: rank %d's sum differs from the rank-order sum", n, length, r)
					}
				}
			}
		}
	}
}

func TestAllReduceFloat64AndBroadcast(t *testing.T) {
	err := runRanks(3, func(c Comm) error {
		v := []float64{float64(c.Rank()), 1}
		if err := AllReduce(context.Background(), c, "g", v); err != nil {
			return err
		}
		if v[0] != 3 || v[1] != 3 {
			return fmt.Errorf("rank %d: sum %v, want [3 3]", c.Rank(), v)
		}
		buf := []byte{0, 0}
		if c.Rank() == 2 {
			buf = []byte{7, 9}
		}
		if err := c.Broadcast(context.Background(), "b", 2, buf); err != nil {
			return err
		}
		if buf[0] != 7 || buf[1] != 9 {
			return fmt.Errorf("rank %d: broadcast got %v", c.Rank(), buf)
		}
		if sent := c.Sent()["b"]; c.Rank() == 2 && sent != 4 || c.Rank() != 2 && sent != 0 {
			return fmt.Errorf("rank %d counted %d broadcast bytes", c.Rank(), sent)
		}
		return c.Barrier(context.Background())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMissingRank: a rank that never arrives leaves the others waiting
// only until their context ends, with an error naming them.
func TestMissingRank(t *testing.T) {
	ranks := NewLocal(2)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := ranks[0].Barrier(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "rank 0 waiting") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadArgs(t *testing.T) {
	c := NewLocal(2)[0]
	if _, err := c.AllToAllV(context.Background(), "x", make([][]byte, 3)); err == nil {
		t.Fatal("3 buffers on 2 ranks accepted")
	}
	if err := c.Broadcast(context.Background(), "x", 2, nil); err == nil {
		t.Fatal("root 2 of 2 accepted")
	}
	if _, err := Decode[float32]([]byte{1, 2, 3}); err == nil {
		t.Fatal("3 bytes decoded as float32s")
	}
}

func TestLaunched(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, _, ok := Launched(env(nil)); ok {
		t.Fatal("launched without launcher variables")
	}
	if n, name, ok := Launched(env(map[string]string{"OMPI_COMM_WORLD_SIZE": "4"})); !ok || n != 4 || name != "OMPI_COMM_WORLD_SIZE" {
		t.Fatalf("Launched = %d %s %v", n, name, ok)
	}
	if c, err := Join(context.Background(), env(nil)); err != nil || c.Size() != 1 {
		t.Fatalf("Join alone = %v, %v", c, err)
	}
	// No comm.mpi module is linked into this test: the error says so.
	if _, err := Join(context.Background(), env(map[string]string{"PMI_SIZE": "2"})); err == nil || !strings.Contains(err.Error(), "PMI_SIZE=2") {
		t.Fatalf("Join under a launcher without comm.mpi: %v", err)
	}
	if From(context.Background()).Size() != 1 {
		t.Fatal("From without a communicator is not single-process")
	}
	c := NewLocal(3)[1]
	if From(With(context.Background(), c)) != Comm(c) {
		t.Fatal("From(With(c)) != c")
	}
}
