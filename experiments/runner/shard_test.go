package runner

import "testing"

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		ok   bool
	}{
		{"0/1", Shard{0, 1}, true}, {"3/4", Shard{3, 4}, true}, {" 1 / 2 ", Shard{1, 2}, true},
		{"4/4", Shard{}, false}, {"-1/4", Shard{}, false}, {"0/0", Shard{}, false}, {"1", Shard{}, false}, {"x/2", Shard{}, false}, {"", Shard{}, false},
	} {
		got, err := ParseShard(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseShard(%q) = %v, %v", tc.in, got, err)
		}
	}
	// Every run belongs to exactly one shard.
	for n := 1; n <= 5; n++ {
		for idx := 0; idx < 12; idx++ {
			owners := 0
			for i := 0; i < n; i++ {
				if (Shard{i, n}).Has(&Run{Index: idx}) {
					owners++
				}
			}
			if owners != 1 {
				t.Fatalf("run %d is in %d of %d shards", idx, owners, n)
			}
		}
	}
}
