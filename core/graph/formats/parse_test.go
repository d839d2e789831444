package formats

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"42", 42, true}, {"-7", -7, true}, {"+7", 7, true},
		{"123456789012345678", 123456789012345678, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false},
		{"", 0, false}, {"-", 0, false}, {"1x", 0, false}, {"1.0", 0, false}, {"0x10", 0, false}, {"1e3", 0, false},
	}
	for _, c := range cases {
		got, ok := parseInt([]byte(c.in))
		if ok != c.ok || ok && got != c.want {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestSplitters(t *testing.T) {
	space := []struct {
		in   string
		want string
		n    int
	}{
		{"a b", "[a b]", 2}, {"  a\t\tb  ", "[a b]", 2}, {"", "[]", 0}, {" \t ", "[]", 0}, {"a b c d", "[a b c]", 4},
	}
	for _, c := range space {
		var buf [3][]byte
		f, n := splitSpace([]byte(c.in), buf[:0])
		if got := fmt.Sprintf("%s", f); got != c.want || n != c.n {
			t.Errorf("splitSpace(%q) = %s, %d; want %s, %d", c.in, got, n, c.want, c.n)
		}
	}
	fields := []struct {
		in   string
		want string
		n    int
	}{
		{"a,b", "[a b]", 2}, {"", "[]", 1}, {"a,", "[a ]", 2}, {",,", "[  ]", 3}, {"1,2,3,4", "[1 2 3]", 4},
	}
	for _, c := range fields {
		var buf [3][]byte
		f, n := splitFields([]byte(c.in), ',', buf[:0])
		if got := fmt.Sprintf("%s", f); got != c.want || n != c.n {
			t.Errorf("splitFields(%q) = %s, %d; want %s, %d", c.in, got, n, c.want, c.n)
		}
	}
	lines := []struct{ in, line, rest string }{
		{"a\nb", "a", "b"}, {"a\r\nb\n", "a", "b\n"}, {"last", "last", ""}, {"\n", "", ""}, {"x\r", "x", ""},
	}
	for _, c := range lines {
		l, r := nextLine([]byte(c.in))
		if string(l) != c.line || string(r) != c.rest {
			t.Errorf("nextLine(%q) = %q, %q; want %q, %q", c.in, l, r, c.line, c.rest)
		}
	}
}

func TestQuoteFieldAndPlural(t *testing.T) {
	if got := quoteField([]byte("a\tb")); got != `"a\tb"` {
		t.Errorf("quoteField = %s", got)
	}
	long := strings.Repeat("x", 100)
	if got := quoteField([]byte(long)); got != `"`+strings.Repeat("x", 40)+`"...` {
		t.Errorf("long field quoted as %s", got)
	}
	for n, want := range map[int]string{0: "0 values", 1: "1 value", 2: "2 values"} {
		if got := plural(n, "value"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
}
