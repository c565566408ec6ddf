package connector

import (
	"bytes"
	"testing"
)

// FuzzJsonConverter feeds record bytes to JsonConverter: decoding never
// panics, and what decodes encodes back to bytes that decode the same.
func FuzzJsonConverter(f *testing.F) {
	for _, s := range []string{
		`{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"string","optional":true},"optional":true,"field":"m"}],"optional":false,"name":"x"},"payload":{"id":1,"m":[[1,"a"],[2,null]]}}`,
		`{"schema":{"type":"bytes","optional":true},"payload":"AAE="}`,
		`{"schema":{"type":"array","items":{"type":"double","optional":false},"optional":false,"default":[1.5]},"payload":null}`,
		`{"schema":null,"payload":{"a":[1,2.5,"x",true,null]}}`,
		`{"a":1}`, `null`, `"s"`, `[1,{"b":2}]`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, b []byte, schemas bool) {
		c := &JsonConverter{SchemasEnable: schemas}
		s, v, err := c.ToConnect("t", b)
		if err != nil {
			return
		}
		out, err := c.FromConnect("t", s, v)
		if err != nil {
			return // e.g. a required field that decoded to its default
		}
		s2, v2, err := c.ToConnect("t", out)
		if err != nil {
			t.Fatalf("re-decoding %s (from %s): %v", out, b, err)
		}
		again, err := c.FromConnect("t", s2, v2)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not stable: %s then %s (%v)", out, again, err)
		}
	})
}
