package config

import (
	"strings"
	"testing"
)

// aliasConf holds enum keys with value aliases.
type aliasConf struct {
	Optimizer string `toml:"optimizer" enum:"adam,sgd" alias:"adamw=adam decoupled decay is not here|sgdm=sgd"`
	Accepted  string `toml:"accepted" enum:"adam,adamw" alias:"adamw=adam never shown"`
	Dangling  string `toml:"dangling" enum:"adam,sgd" alias:"adamx=lamb"`
}

// TestValueAliases checks that a value alias suggests its target with its
// note, that an alias which is itself an allowed value is simply accepted
// (so a value added later needs no edit of the alias), and that an alias
// whose target is not allowed suggests nothing of it.
func TestValueAliases(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       []string // fragments of the error; nil = no error
		not        string
	}{
		{"alias with note", `optimizer = "adamw"`, []string{`optimizer = "adamw": allowed values are "adam", "sgd" (did you mean "adam"? decoupled decay is not here)`}, ""},
		{"alias without note", `optimizer = "sgdm"`, []string{`(did you mean "sgd"?)`}, ""},
		{"alias that is a value", `accepted = "adamw"`, nil, ""},
		{"target not allowed", `dangling = "adamx"`, []string{`dangling = "adamx": allowed values are "adam", "sgd"`}, "lamb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c aliasConf
			err := DecodeStrict("a.toml", []byte(tc.toml), &c)
			if tc.want == nil {
				if err != nil || c.Accepted != "adamw" {
					t.Fatalf("err %v, accepted %q; want adamw accepted", err, c.Accepted)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tc.not != "" && strings.Contains(err.Error(), tc.not) {
				t.Errorf("error %q suggests %q, which the key does not take", err, tc.not)
			}
		})
	}
}

func TestParseAliasTagPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "bad alias tag") {
			t.Fatalf("panic %v, want a bad alias tag", r)
		}
	}()
	parseAliasTag("adamw")
}
