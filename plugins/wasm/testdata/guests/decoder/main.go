//go:build wasip1

// A decoder for the host's tests; option mode picks its result: 0 the
// dot product, 1 two scores per pair [E,2], 2 one score per node [N,1],
// 3 a panic, 4 a learnt diagonal (a parameter), 5 a failure.
package main

import (
	"strata/models/sdk"
	"strata/models/sdk/decoder"
)

func main() {}

func init() { decoder.Register(decode) }

func decode(g, h sdk.Value) sdk.Value {
	in, _ := sdk.Dims()
	e := sdk.Mul(sdk.GatherSrc(g, h), sdk.GatherDst(g, h))
	switch sdk.Cfg("mode", 0) {
	case 1:
		return sdk.MatMul(e, sdk.Param("w", []int64{in, 2}, sdk.Glorot))
	case 2:
		return sdk.MatMul(h, sdk.Param("w", []int64{in, 1}, sdk.Glorot))
	case 3:
		panic("decoder boom")
	case 4:
		return sdk.MatMul(e, sdk.Param("w", []int64{in, 1}, sdk.Ones))
	case 5:
		sdk.Fail("option mode = 5 is refused")
	}
	return sdk.UDotV(g, h, h, 1)
}
