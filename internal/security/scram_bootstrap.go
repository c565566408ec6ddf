package security

import (
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ScramArg is a SCRAM credential given on the command line when a cluster
// is formatted, as kafka-storage format --add-scram takes it (Kafka's
// ScramParser):
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret]
//	SCRAM-SHA-512=[name=bob,iterations=8192,salt="<base64>",saltedpassword="<base64>"]
//
// iterations defaults to 4096 and salt to random bytes; a value may be
// in double quotes; a password cannot contain a comma.
type ScramArg struct {
	Name       string
	Mechanism  ScramMechanism
	Credential ScramCredential
}

// ParseScramArg parses one --add-scram argument and derives its
// credential; random supplies a salt when none is given.
func ParseScramArg(arg string, random io.Reader) (ScramArg, error) {
	arg = strings.TrimSpace(arg)
	mechName, config, ok := strings.Cut(arg, "=")
	if !ok {
		return ScramArg{}, fmt.Errorf("failed to find equals sign in SCRAM argument")
	}
	m, ok := ScramMechanismByName(mechName)
	if !ok {
		return ScramArg{}, fmt.Errorf("the add-scram mechanism %s is not supported: want SCRAM-SHA-256 or SCRAM-SHA-512", mechName)
	}
	inner, ok := strings.CutPrefix(config, "[")
	if !ok {
		return ScramArg{}, fmt.Errorf("expected configuration string to start with [")
	}
	if inner, ok = strings.CutSuffix(inner, "]"); !ok {
		return ScramArg{}, fmt.Errorf("expected configuration string to end with ]")
	}
	fields := map[string]string{}
	for _, c := range strings.Split(inner, ",") {
		k, v, ok := strings.Cut(c, "=")
		if !ok {
			return ScramArg{}, fmt.Errorf("no equals sign found in SCRAM component: %s", c)
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		fields[k] = v
	}
	take := func(k string) (string, bool) { v, ok := fields[k]; delete(fields, k); return v, ok }
	a := ScramArg{Mechanism: m}
	if a.Name, ok = take("name"); !ok || a.Name == "" {
		return ScramArg{}, fmt.Errorf("you must supply 'name' to add-scram")
	}
	var salt []byte
	if s, ok := take("salt"); ok {
		var err error
		if salt, err = base64.StdEncoding.DecodeString(s); err != nil {
			return ScramArg{}, fmt.Errorf("failed to decode given salt: %s", s)
		}
	}
	iterations := int64(ScramMinIterations)
	if s, ok := take("iterations"); ok {
		var err error
		if iterations, err = strconv.ParseInt(s, 10, 32); err != nil {
			return ScramArg{}, fmt.Errorf("failed to parse iterations count: %s", s)
		}
	}
	if iterations < ScramMinIterations || iterations > ScramMaxIterations {
		return ScramArg{}, fmt.Errorf("the 'iterations' value must be between %d and %d for add-scram using %s", ScramMinIterations, ScramMaxIterations, m)
	}
	password, hasPassword := take("password")
	saltedB64, hasSalted := take("saltedpassword")
	var salted []byte
	switch {
	case !hasPassword && !hasSalted:
		return ScramArg{}, fmt.Errorf("you must supply one of 'password' or 'saltedpassword' to add-scram")
	case !hasPassword && salt == nil:
		return ScramArg{}, fmt.Errorf("you must supply 'salt' with 'saltedpassword' to add-scram")
	case !hasPassword:
		var err error
		if salted, err = base64.StdEncoding.DecodeString(saltedB64); err != nil {
			return ScramArg{}, fmt.Errorf("failed to decode given saltedpassword: not base64")
		}
	}
	if len(fields) > 0 {
		return ScramArg{}, fmt.Errorf("unknown SCRAM configurations: %s", strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
	}
	if salt == nil {
		salt = make([]byte, 32)
		if _, err := io.ReadFull(random, salt); err != nil {
			return ScramArg{}, fmt.Errorf("generate a salt: %w", err)
		}
	}
	if salted == nil {
		salted = m.SaltedPassword(password, salt, int(iterations))
	}
	a.Credential = m.CredentialFromSalted(salt, salted, int32(iterations))
	return a, nil
}
