package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParsePropertiesSyntax(t *testing.T) {
	text := strings.Join([]string{
		"# comment",
		"! also a comment",
		"   # indented comment",
		"",
		"a=1",
		"b: 2",
		"c 3",
		"d   =   4  ", // trailing blanks are part of the value
		"  e\t:\tfive",
		"f=",
		"g",
		`h=one \`,
		`    two \`,
		`three`,
		`i=ends in escaped backslash \\`,
		`j=x`,
		`k\=ey\:s\ x=v`,
		`l=tab\there\nnl \u0041\u00e9 \q`,
		`# comment ending in backslash \`,
		`m=not swallowed`,
		`n=\uD83D\uDE00`,
		"o=crlf\r",
		"p=cr\rq=after-cr",
		"a=last wins",
	}, "\n")
	got, err := ParseProperties(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []Property{
		{"a", "1", 5}, {"b", "2", 6}, {"c", "3", 7}, {"d", "4  ", 8}, {"e", "five", 9},
		{"f", "", 10}, {"g", "", 11}, {"h", "one two three", 12},
		{"i", `ends in escaped backslash \`, 15}, {"j", "x", 16}, {"k=ey:s x", "v", 17},
		{"l", "tab\there\nnl Aé q", 18}, {"m", "not swallowed", 20}, {"n", "😀", 21},
		{"o", "crlf", 22}, {"p", "cr", 23}, {"q", "after-cr", 24}, {"a", "last wins", 25},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			var g, w Property
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("property %d: got %#v, want %#v", i, g, w)
			}
		}
	}
}

func TestParsePropertiesContinuationAtEOF(t *testing.T) {
	got, err := ParseProperties("a=b\\")
	if err != nil || len(got) != 1 || got[0].Value != "b" {
		t.Fatalf("got %+v, %v; want a=b", got, err)
	}
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	_, err := ParseProperties("x=1\nkey=\\u12G4\n")
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "key") {
		t.Fatalf("got %v, want an error naming line 2 and key", err)
	}
}

func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{
		"a=b", "a b", "a:b", "a\\\n  b=c", "\\u0041=\\u00", "#x\\\ny=z", "k\\=1=2\r\nz",
		EmbeddedDefaults, "a=\\uD83D\\uDE00", "\\", "=\n:\n \t\f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		props, err := ParseProperties(s)
		if err != nil {
			return
		}
		last := 0
		for _, p := range props {
			if p.Line <= last {
				t.Fatalf("lines not increasing: %+v", props)
			}
			last = p.Line
		}
	})
}
