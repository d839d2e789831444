package train

import (
	"encoding/binary"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestArrayFileRoundTrip writes a checkpoint-format file and reads it back
// bit for bit (NaN payloads, -0, subnormals included).
func TestArrayFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.ckpt")
	arrays := map[string][]float64{
		"param/l0.w": {1, -0.0, math.SmallestNonzeroFloat64, math.Inf(-1), math.Float64frombits(0x7ff8000000000123)},
		"opt/m/l0.w": make([]float64, 10000),
		"empty":      {},
	}
	meta := checkpointMeta{ConfigSHA256: "abc", NextEpoch: 7, BestValidAcc: 0.1 + 0.2, TimesS: []float64{0.5}}
	if err := writeArrays(path, "checkpoint", meta, arrays); err != nil {
		t.Fatal(err)
	}
	var got checkpointMeta
	back, err := readArrays(path, "checkpoint", &got)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConfigSHA256 != "abc" || got.NextEpoch != 7 || got.BestValidAcc != 0.1+0.2 || !slices.Equal(got.TimesS, []float64{0.5}) {
		t.Errorf("meta %+v", got)
	}
	if len(back) != len(arrays) {
		t.Fatalf("%d arrays back, want %d", len(back), len(arrays))
	}
	for k, v := range arrays {
		w := back[k]
		if len(w) != len(v) {
			t.Fatalf("%s: %d values back, want %d", k, len(w), len(v))
		}
		for i := range v {
			if math.Float64bits(v[i]) != math.Float64bits(w[i]) {
				t.Errorf("%s[%d] = %x, want %x", k, i, math.Float64bits(w[i]), math.Float64bits(v[i]))
			}
		}
	}
	if _, err := readArrays(path, "model", &ModelMeta{}); err == nil || !strings.Contains(err.Error(), "not a model file") {
		t.Errorf("read as a model: %v", err)
	}
}

// TestArrayFileCorrupt truncates, flips and inflates a file: every read
// fails with an error (no panic, no huge allocation).
func TestArrayFileCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.ckpt")
	if err := writeArrays(path, "checkpoint", checkpointMeta{}, map[string][]float64{"x": {1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hlen := int(binary.LittleEndian.Uint32(good[12:]))
	huge := slices.Clone(good)
	binary.LittleEndian.PutUint32(huge[12:], math.MaxUint32)
	// An array length of 2^60 in the header, with the header's length fixed.
	bigLen := strings.Replace(string(good[16:16+hlen]), `"len":3`, `"len":1152921504606846976`, 1)
	bigArr := slices.Concat(good[:12], binary.LittleEndian.AppendUint32(nil, uint32(len(bigLen))), []byte(bigLen), good[16+hlen:])
	cases := map[string][]byte{"huge header": huge, "huge array": bigArr}
	for n := 0; n < len(good); n += 7 {
		cases["truncated "+string(rune('a'+n%26))+strings.Repeat("x", n/26)] = good[:n]
	}
	for i := 0; i < len(good); i += 5 {
		b := slices.Clone(good)
		b[i] ^= 0x40
		cases["flipped "+strings.Repeat("y", i)] = b
	}
	for name, b := range cases {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readArrays(path, "checkpoint", &checkpointMeta{}); err == nil {
			t.Errorf("%.40s: read without error", name)
		}
	}
}

// FuzzArrayFile reads arbitrary bytes as a checkpoint: an error or a
// valid file, never a panic or an allocation beyond the file's size; and
// a checkpoint that passes the meaning checks (readCheckpoint) holds a
// next epoch in [1, train.epochs], accuracies in [0, 1] and finite arrays
// only.
func FuzzArrayFile(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed.ckpt")
	if err := writeArrays(seed, "checkpoint", checkpointMeta{NextEpoch: 3}, map[string][]float64{"a": {1, 2}, "b": {3}}); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("STRATAAF"))
	valid := validCheckpoint()
	for _, edit := range []func(m *checkpointMeta, a map[string][]float64){
		func(*checkpointMeta, map[string][]float64) {},
		func(m *checkpointMeta, _ map[string][]float64) { m.NextEpoch = -5 },
		func(m *checkpointMeta, _ map[string][]float64) { m.BestValidAcc = 5 },
		func(_ *checkpointMeta, a map[string][]float64) { a["param/l0.w"] = []float64{math.NaN()} },
	} {
		meta, arrays := valid.meta, maps.Clone(valid.arrays)
		edit(&meta, arrays)
		if err := writeArrays(seed, "checkpoint", meta, arrays); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.ckpt")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		arrays, err := readArrays(path, "checkpoint", &checkpointMeta{})
		if err != nil {
			return
		}
		total := 0
		for _, v := range arrays {
			total += 8 * len(v)
		}
		if total > len(data) {
			t.Errorf("%d bytes of arrays from a %d-byte file", total, len(data))
		}
		const epochs = 10
		ck, err := readCheckpoint(path, epochs)
		if err != nil {
			return
		}
		m := ck.meta
		if m.NextEpoch < 1 || m.NextEpoch > epochs || m.BestEpoch >= m.NextEpoch || !(m.BestValidAcc >= 0 && m.BestValidAcc <= 1) {
			t.Errorf("accepted next_epoch %d, best_epoch %d, best_valid_acc %v", m.NextEpoch, m.BestEpoch, m.BestValidAcc)
		}
		for name, v := range ck.arrays {
			for _, x := range v {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("accepted %s = %v", name, x)
				}
			}
		}
	})
}
