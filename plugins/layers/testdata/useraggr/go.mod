// A user's aggregator module outside the strata module: it imports the
// SDK through this go.mod (replace points at the strata checkout; from a
// copy elsewhere, point it at yours). Build it with
//
//	GOOS=wasip1 GOARCH=wasm GOFLAGS=-mod=mod go build -buildmode=c-shared -o lse.wasm .
module example.com/useraggr

go 1.26

require strata v0.0.0

replace strata => ../../../..
