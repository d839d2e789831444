// Package sdk is the Go guest SDK for strata layer modules, in the spirit of
// PyG's MessagePassing: a layer is a function that records ops on typed
// handles and returns its output, and the host checks shapes, allocates and
// initialises the weights, differentiates and runs the graph natively.
//
// A complete layer module (build it with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o gcn.wasm .):
//
//	//go:build wasip1
//
//	package main
//
//	import "strata/models/sdk"
//
//	func main() {}
//
//	func init() { sdk.Register(layer) }
//
//	func layer() sdk.Value {
//		in, out := sdk.Dims()
//		x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
//		w := sdk.Param("weight", []int64{in, out}, sdk.Glorot)
//		h := sdk.NarrowAggregate(sdk.Graph(sdk.AdjSelf), x, w, sdk.GCN)
//		h = sdk.Bias(h, sdk.Param("bias", []int64{out}, sdk.Zeros))
//		return sdk.Post(h, sdk.ReLU)
//	}
//
// Importing this package exports strata_abi_version and strata_layer_spec;
// the module calls the function given to Register once per layer. No error
// checks are needed: a failing op returns a poison Value, later ops given
// poison return poison, and the host reports the first error as
// "op #k kind: detail". See docs/models.md.
//
// Everything except this comment is built only for GOOS=wasip1.
package sdk
