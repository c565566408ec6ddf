package security

import (
	"reflect"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []JAASModule
	}{
		{`a.b.C required;`, []JAASModule{{Class: "a.b.C", Flag: "required", Options: map[string]string{}}}},
		{`  org.x.Login   REQUIRED
		    username="admin"   // the broker's own
		    /* users */ user_admin="a b;c" user_$x-y.z=plain42 n=123 ;
		  other.Login optional q='it"s';`,
			[]JAASModule{
				{Class: "org.x.Login", Flag: "required", Options: map[string]string{
					"username": "admin", "user_admin": "a b;c", "user_$x-y.z": "plain42", "n": "123"}},
				{Class: "other.Login", Flag: "optional", Options: map[string]string{"q": "it\"s"}},
			}},
		// Later options win; escapes as Java's StreamTokenizer reads them.
		{`m sufficient k="1" k="tab\there \"q\" \\ \101\7" u="ü";`, []JAASModule{{Class: "m", Flag: "sufficient",
			Options: map[string]string{"k": "tab\there \"q\" \\ A\a", "u": "ü"}}}},
	} {
		got, err := ParseJAAS(tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseJAASErrors(t *testing.T) {
	for _, in := range []string{
		``,
		`   // only a comment`,
		`a.B`,
		`a.B required`,
		`a.B always;`,
		`a.B required k;`,
		`a.B required k=;`,
		`a.B required k="unterminated;`,
		`a.B required k=v /* open comment`,
		`a.B required =v;`,
		`a.B required k=v; ;`,
		`"quoted" required;`,
		`a.B required k=v ? ;`,
		`a.B optional q='it''s';`, // two strings: the second is a stray token
	} {
		if mods, err := ParseJAAS(in); err == nil {
			t.Errorf("%q parsed as %+v", in, mods)
		}
	}
}
