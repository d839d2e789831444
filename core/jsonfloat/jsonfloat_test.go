package jsonfloat

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

type inner struct {
	X float64 `json:"x"`
}

type sample struct {
	A     float64            `json:"a"`
	B     float64            `json:"b,omitempty"`
	C     float32            `json:"c"`
	M     map[string]float64 `json:"m,omitempty"`
	L     []inner            `json:"l"`
	S     string             `json:"s"`
	T     time.Time          `json:"t"`
	P     *inner             `json:"p"`
	Skip  int                `json:"-"`
	I     any                `json:"i"`
	B64   []byte             `json:"b64"`
	inner                    // embedded: fields promoted
	priv  int
}

// TestSameAsEncodingJSON checks that finite values encode byte for byte
// as encoding/json encodes them.
func TestSameAsEncodingJSON(t *testing.T) {
	v := sample{A: 0.1, C: 1.5, M: map[string]float64{"z": 1e-9, "a": 3}, L: []inner{{1e21}, {-0}},
		S: "<x>", T: time.Unix(5, 0).UTC(), I: []any{1, "a"}, B64: []byte("hi"), inner: inner{2}}
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestNonFinite(t *testing.T) {
	v := sample{A: math.NaN(), B: math.Inf(1), C: float32(math.Inf(-1)), M: map[string]float64{"k": math.NaN()}, L: []inner{{math.Inf(-1)}}}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("output is not JSON: %v: %s", err, got)
	}
	for k, want := range map[string]any{"a": "NaN", "b": "+Inf", "c": "-Inf"} {
		if back[k] != want {
			t.Errorf("%s = %v, want %v", k, back[k], want)
		}
	}
	if back["m"].(map[string]any)["k"] != "NaN" || back["l"].([]any)[0].(map[string]any)["x"] != "-Inf" {
		t.Errorf("nested: %s", got)
	}
}
