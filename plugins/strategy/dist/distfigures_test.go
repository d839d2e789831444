package dist

import (
	"strings"
	"testing"
)

func TestDistFiguresSummary(t *testing.T) {
	cases := []struct {
		name  string
		ranks []RankStats
		want  []string // "" : no summary
	}{
		{"one rank", []RankStats{{Rank: 0}}, nil},
		{"two ranks", []RankStats{{Rank: 0, EpochTimeMedianS: 1.5, SentBytes: 2048}, {Rank: 1, EpochTimeMedianS: 2, SentBytes: 10}}, []string{"0: 1.5s", "1: 2s", "sent"}},
	}
	for _, c := range cases {
		s := (&DistFigures{Ranks: c.ranks}).Summary()
		if len(c.want) == 0 && s != "" {
			t.Errorf("%s: summary %q, want none", c.name, s)
		}
		for _, w := range c.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s: summary %q lacks %q", c.name, s, w)
			}
		}
	}
}
