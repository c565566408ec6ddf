package security

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// DistinguishedName renders a certificate's raw subject (or issuer) the
// way Java's X500Principal.getName() does, in RFC 2253 form: the RDNs
// most specific first, separated by commas, each attribute as
// KEYWORD=value. That is the string Kafka's ssl.principal.mapping.rules
// match, so a rule written for a Kafka broker must see the same text here.
//
// Java's rules, which this follows:
//   - Only CN, C, L, ST, O, OU, STREET, DC and UID have keywords; any other
//     attribute type is written as its dotted OID, and its value as '#'
//     followed by the hex of the value's DER encoding.
//   - A value that is not one of PrintableString, TeletexString,
//     IA5String, GeneralString, BMPString or UTF8String is written in the
//     '#' hex form too.
//   - In a string value the characters , = + < > # ; " \ are escaped with
//     a backslash, NUL becomes \00, and leading and trailing spaces (and
//     carriage returns) are escaped with a backslash.
//   - The attributes of a multi-valued RDN keep their encoded order and
//     are joined with '+'.
func DistinguishedName(raw []byte) (string, error) {
	in := cryptobyte.String(raw)
	var seq cryptobyte.String
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !in.Empty() {
		return "", errors.New("malformed distinguished name")
	}
	var rdns []string
	for !seq.Empty() {
		var set cryptobyte.String
		if !seq.ReadASN1(&set, cbasn1.SET) {
			return "", errors.New("malformed relative distinguished name")
		}
		var avas []string
		for !set.Empty() {
			var atv cryptobyte.String
			var oid asn1.ObjectIdentifier
			var value cryptobyte.String
			var tag cbasn1.Tag
			if !set.ReadASN1(&atv, cbasn1.SEQUENCE) || !atv.ReadASN1ObjectIdentifier(&oid) {
				return "", errors.New("malformed attribute in distinguished name")
			}
			full := []byte(atv)
			if !atv.ReadAnyASN1(&value, &tag) || !atv.Empty() {
				return "", errors.New("malformed attribute value in distinguished name")
			}
			avas = append(avas, formatAVA(oid, tag, []byte(value), full))
		}
		rdns = append(rdns, strings.Join(avas, "+"))
	}
	// RFC 2253 writes the sequence last to first.
	for i, j := 0, len(rdns)-1; i < j; i, j = i+1, j-1 {
		rdns[i], rdns[j] = rdns[j], rdns[i]
	}
	return strings.Join(rdns, ","), nil
}

// rfc2253Keywords are the attribute types Java writes by name in RFC 2253
// form (sun.security.x509.AVAKeyword entries marked RFC 2253 compliant).
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// DER string tags Java renders as text (AVA.isDerString, non-canonical).
const (
	tagUTF8String      = 12
	tagPrintableString = 19
	tagT61String       = 20
	tagIA5String       = 22
	tagGeneralString   = 27
	tagBMPString       = 30
)

func formatAVA(oid asn1.ObjectIdentifier, tag cbasn1.Tag, value, encoded []byte) string {
	keyword, named := rfc2253Keywords[oid.String()]
	if !named {
		keyword = oid.String()
	}
	text, isString := decodeDERString(tag, value)
	if !named || !isString {
		return keyword + "=#" + hex.EncodeToString(encoded)
	}
	return keyword + "=" + escapeRFC2253(text)
}

// decodeDERString returns the text of the string types Java renders as
// text. Java (17) decodes the content bytes of every one of them as UTF-8,
// a BMPString included, replacing each malformed byte with U+FFFD; so do
// we, to print the same name.
func decodeDERString(tag cbasn1.Tag, b []byte) (string, bool) {
	switch tag {
	case tagUTF8String, tagPrintableString, tagT61String, tagIA5String, tagGeneralString, tagBMPString:
	default:
		return "", false
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		sb.WriteRune(r) // utf8.RuneError for a malformed byte
		b = b[n:]
	}
	return sb.String(), true
}

// escapeRFC2253 escapes a value as Java's AVA.toRFC2253String does.
func escapeRFC2253(s string) string {
	const escapees = ",=+<>#;\"\\"
	var b strings.Builder
	for _, c := range s {
		switch {
		case strings.ContainsRune(escapees, c):
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(c)
		}
	}
	chars := []rune(b.String())
	lead := 0
	for lead < len(chars) && (chars[lead] == ' ' || chars[lead] == '\r') {
		lead++
	}
	trail := len(chars) - 1
	for trail >= 0 && (chars[trail] == ' ' || chars[trail] == '\r') {
		trail--
	}
	var out strings.Builder
	for i, c := range chars {
		if i < lead || i > trail {
			out.WriteByte('\\')
		}
		out.WriteRune(c)
	}
	return out.String()
}
