package pickle

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"strata/core/graph"
)

// Pickles written by Python 3.11 and numpy 1.24 (pickle.dumps).
const (
	// np.asfortranarray(np.array([[1, 2, 3], [4, 5, 6]], dtype="<i4")), protocol 4.
	fortranArray = "800495a2000000000000008c156e756d70792e636f72652e6d756c74696172726179948c0c5f7265636f6e7374727563749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b014b024b03869468038c0564747970659493948c02693494898887945294284b038c013c944e4e4e4affffffff4affffffff4b00749462884318010000000400000002000000050000000300000006000000947494622e"
	// (np.int64(7), np.float64(2.5)), protocol 3.
	scalars = "8003636e756d70792e636f72652e6d756c746961727261790a7363616c61720a7100636e756d70790a64747970650a71015802000000693871028988877103527104284b0358010000003c71054e4e4e4affffffff4affffffff4b00747106624308070000000000000071078671085271096800680158020000006638710a898887710b52710c284b0368054e4e4e4affffffff4affffffff4b0074710d6243080000000000000440710e86710f5271108671112e"
	// The same array, protocol 2 (its first bytes): Python 3 pickles its
	// bytes through _codecs.encode.
	protocol2Array = "8002636e756d70792e636f72652e6d756c746961727261790a5f7265636f6e7374727563740a7100636e756d70790a6e6461727261790a71014b00857102635f636f646563730a656e636f64650a7103580100000062710458060000006c6174696e317105867106527107877108527109284b014b024b0386710a636e756d70790a64747970650a710b58020000006934710c898887710d52710e284b0358010000003c710f4e4e4e4affffffff4affffffff4b00747110628968035818000000010000000200000003000000040000000500000006000000"
)

// recorder is a Decoder that keeps what it was given: an array's data as
// its descr, shape, order and byte count; a little-endian int64 or
// float64 scalar as its value.
type recorder struct{}

func (recorder) Array(descr string, shape []int, fortran bool, raw []byte) (any, error) {
	return fmt.Sprintf("%s %v fortran=%v %d bytes", descr, shape, fortran, len(raw)), nil
}

func (recorder) Scalar(descr string, raw []byte) (any, error) {
	if len(raw) != 8 {
		return nil, fmt.Errorf("scalar of %d bytes", len(raw))
	}
	v := binary.LittleEndian.Uint64(raw)
	if strings.Contains(descr, "f") {
		return math.Float64frombits(v), nil
	}
	return int64(v), nil
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLoad reads pickles numpy wrote and hand-made ones, and refuses every
// global outside numpy's and scipy.sparse's constructors by name.
func TestLoad(t *testing.T) {
	handMade := func(s string) string { return hex.EncodeToString([]byte(s)) }
	cases := []struct {
		name, pickle string
		want         any
		wantErr      string
	}{
		{name: "fortran array", pickle: fortranArray,
			want: &Array{Shape: []int{2, 3}, Descr: "<i4", Data: "<i4 [2 3] fortran=true 24 bytes"}},
		{name: "scalars", pickle: scalars, want: Tuple{int64(7), 2.5}},
		{name: "tuple", pickle: handMade("\x80\x02(K\x01X\x01\x00\x00\x00a\x88t."), want: Tuple{int64(1), "a", true}},
		{name: "dict", pickle: handMade("\x80\x02}(X\x01\x00\x00\x00kK\x05u."), want: &Dict{M: map[string]any{"k": int64(5)}}},
		{name: "list", pickle: handMade("\x80\x02](K\x01K\x02e."), want: &List{Items: []any{int64(1), int64(2)}}},
		{name: "GLOBAL os.system", pickle: handMade("\x80\x02cos\nsystem\n."), wantErr: "refusing to load os.system"},
		{name: "STACK_GLOBAL builtins.eval", pickle: handMade("\x80\x04\x8c\x08builtins\x8c\x04eval\x93."), wantErr: "refusing to load builtins.eval"},
		{name: "protocol 2 array", pickle: protocol2Array, wantErr: "refusing to load _codecs.encode"},
		{name: "protocol 6", pickle: handMade("\x80\x06N."), wantErr: "protocol 6 is not supported"},
		{name: "two values at STOP", pickle: handMade("\x80\x02NN."), wantErr: "2 values on the stack"},
		{name: "no STOP", pickle: handMade("\x80\x02N"), wantErr: "without STOP"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Load(mustHex(t, c.pickle), recorder{})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, graph.ErrFormat) && !errors.Is(err, graph.ErrVersion) && !errors.Is(err, graph.ErrTruncated) {
					t.Fatalf("got %v, %v; want an error naming %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %#v, %v; want %#v", got, err, c.want)
			}
		})
	}
}

// TestLoadTruncated cuts a valid pickle at every byte: each prefix is an
// error, never a panic or a value.
func TestLoadTruncated(t *testing.T) {
	b := mustHex(t, fortranArray)
	for n := range len(b) {
		if v, err := Load(b[:n], recorder{}); err == nil {
			t.Fatalf("a pickle cut at %d of %d bytes gave %v", n, len(b), v)
		}
	}
}

// TestLoadDecoderError passes the decoder's error through.
func TestLoadDecoderError(t *testing.T) {
	want := errors.New("over budget")
	if _, err := Load(mustHex(t, fortranArray), failing{want}); !errors.Is(err, want) {
		t.Fatalf("got %v, want the decoder's error", err)
	}
}

type failing struct{ err error }

func (f failing) Array(string, []int, bool, []byte) (any, error) { return nil, f.err }
func (f failing) Scalar(string, []byte) (any, error)             { return nil, f.err }
