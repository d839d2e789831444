//go:build wasip1

// A misbehaving layer for the host's tests; option mode picks the failure.
package main

import "strata/models/sdk"

func main() {}

func init() { sdk.Register(layer) }

var hoard [][]byte

func layer() sdk.Value {
	x := sdk.Input(4)
	switch sdk.Cfg("mode", 0) {
	case 1: // panic
		var m map[string]int
		m["boom"]++
	case 2: // out of memory
		for {
			hoard = append(hoard, make([]byte, 1<<20))
		}
	case 3: // infinite loop
		for i := 0; ; i++ {
			if i < 0 {
				break
			}
		}
	case 4: // shape error
		w := sdk.Param("W", []int64{5, 3}, sdk.Glorot)
		return sdk.MatMul(x, w)
	case 5: // log and fail
		sdk.Log("about to fail")
		sdk.Fail("option mode=5 is not supported")
	case 6: // stdout and stderr output, then succeed
		println("hello from the guest")
	}
	return x
}
