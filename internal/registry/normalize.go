package registry

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
)

// normalizing reports whether a request on subject normalizes its schema:
// normalize=true in the query, or the normalize setting of the subject's
// config (else its context's, else the global one), as Confluent's registry decides.
func (r *Registry) normalizing(subject string, req schemaRequest) bool {
	if req.normalize {
		return true
	}
	for _, s := range scopes(subject) {
		if n, ok := r.st.normalizeOf(s); ok {
			return n
		}
	}
	return false
}

// normalizeRequest is Confluent's normalize=true: the references sorted
// and without duplicates and, for Avro, the schema replaced by its
// normalized form (named types referenced by their full names, aliases
// and properties sorted, compact JSON), which is what register then
// stores. Two schemas that differ only in those respects get one id. A
// Protobuf schema's identity is its normalized form already; its text is
// kept as given.
func (r *Registry) normalizeRequest(subject string, p *parsed, req schemaRequest) (*parsed, schemaRequest, *Error) {
	if !r.normalizing(subject, req) {
		return p, req, nil
	}
	refs := slices.Clone(req.References)
	slices.SortFunc(refs, func(a, b Reference) int {
		switch {
		case a.Name != b.Name:
			return strings.Compare(a.Name, b.Name)
		case a.Subject != b.Subject:
			return strings.Compare(a.Subject, b.Subject)
		}
		return a.Version - b.Version
	})
	req.References = slices.Compact(refs)
	if p.avro != nil {
		text, err := normalizedAvro(p.avro.canonical)
		if err != nil {
			return nil, req, invalidSchema("Invalid schema of type %s, details: %v", p.typ, err)
		}
		req.Schema = text
	}
	np, err := r.parseIn(contextOf(subject), req.SchemaType, req.Schema, req.References)
	if err != nil {
		return nil, req, err
	}
	return np, req, nil
}

// normalizedAvro rewrites the full JSON form of a parsed Avro schema
// (hamba's, which writes names in full and properties sorted) with every
// aliases list sorted, keeping the order of everything else.
func normalizedAvro(canonical string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(canonical))
	dec.UseNumber() // numbers are copied as written
	var out bytes.Buffer
	if err := copySortingAliases(dec, &out); err != nil {
		return "", err
	}
	return out.String(), nil
}

// copySortingAliases copies the next JSON value from dec to out, sorting
// the string list of each "aliases" key.
func copySortingAliases(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		out.WriteByte('{')
		for i := 0; dec.More(); i++ {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			if i > 0 {
				out.WriteByte(',')
			}
			kb, _ := json.Marshal(key)
			out.Write(kb)
			out.WriteByte(':')
			if key == "aliases" {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return err
				}
				var names []string
				if json.Unmarshal(raw, &names) == nil {
					sort.Strings(names)
					raw, _ = json.Marshal(names)
				}
				out.Write(raw)
				continue
			}
			if err := copySortingAliases(dec, out); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		out.WriteByte('}')
		return err
	case json.Delim('['):
		out.WriteByte('[')
		for i := 0; dec.More(); i++ {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := copySortingAliases(dec, out); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		out.WriteByte(']')
		return err
	}
	b, err := json.Marshal(tok) // a string, json.Number, bool or nil
	out.Write(b)
	return err
}
