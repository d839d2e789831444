//go:build wasip1

package sdk

var decoder func(g, h Value) Value

// RegisterDecoder makes the module a link-prediction decoder: f scores
// pairs of nodes from their embeddings h [N,C] (C is Dims()'s in). g is the
// pair graph: node i's row lists the sources of the pairs whose
// destination is i, one edge per pair (a pair may repeat, and u may equal
// v), so GatherSrc(g, h) is each pair's source row and GatherDst(g, h) its
// destination row. f returns the pairs' scores (logits) [E,1], one per
// edge of g in CSR order. Call it from init. Its parameters get the
// prefix "decoder." (their checkpoint keys); it reads options with Cfg,
// CfgFloat and CfgStr as a layer does.
func RegisterDecoder(f func(g, h Value) Value) { decoder = f }

//go:wasmexport strata_decode
func decodeExport(g, h int32) int32 {
	if decoder == nil {
		Fail("the module registered no decoder: call sdk.RegisterDecoder(f) in func init")
		return -1
	}
	return int32(decoder(Value(g), Value(h)))
}
