package main

// `samsa schema`: a Schema Registry client (franz-go's pkg/sr) for the
// registry `samsa server` or `samsa registry` serves, or any
// Confluent-compatible one.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

const schemaUsage = `usage: samsa schema <register|get|list|delete|compat> [flags]

  register SUBJECT   register a schema (--file or --schema) and print its id
  get SUBJECT        print a version's schema (--version, default latest)
  get --id N         print the schema with id N
  list [SUBJECT]     list subjects, or a subject's versions
  delete SUBJECT     soft-delete a subject or one --version; --permanent after
  compat SUBJECT     check a schema against the subject's compatibility level
                     (or one --version); exit 1 when incompatible

Each takes --registry (default http://127.0.0.1:8081) and --context (a
schema context such as .staging; subjects may also be qualified as
:.staging:SUBJECT). Run
"samsa schema <subcommand> -h" for the flags of each.
`

func runSchema(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("schema", schemaUsage, map[string]subcommand{
		"register": schemaRegister,
		"get":      schemaGet,
		"list":     schemaList,
		"delete":   schemaDelete,
		"compat":   schemaCompat,
	}, args, stdout, stderr)
}

// registryFlags are the flags every schema subcommand takes.
type registryFlags struct {
	url      string
	timeout  time.Duration
	user     string
	password string
	ca       string
	context  string
}

// registryPasswordEnv holds the registry password when
// --registry-password is not given.
const registryPasswordEnv = "SAMSA_REGISTRY_PASSWORD"

func (rf *registryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&rf.url, "registry", "http://127.0.0.1:8081", "Schema Registry `URL`")
	fs.DurationVar(&rf.timeout, "timeout", 30*time.Second, "give up if the registry does not answer within this `duration`")
	fs.StringVar(&rf.user, "registry-user", "", "`user` of the registry's HTTP basic authentication")
	fs.StringVar(&rf.password, "registry-password", "", "`password` of --registry-user (default: $"+registryPasswordEnv+")")
	fs.StringVar(&rf.ca, "registry-ca", "", "PEM `file` of the CA certificates to trust for an https registry (default: the system's roots)")
	fs.StringVar(&rf.context, "context", "", "schema `context` (.name) the subjects and ids are in (default: the default context)")
}

func (rf *registryFlags) client() (*sr.Client, context.Context, context.CancelFunc, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if rf.ca != "" {
		pem, err := os.ReadFile(rf.ca)
		pool := x509.NewCertPool()
		if err == nil && !pool.AppendCertsFromPEM(pem) {
			err = errors.New("no PEM certificate in it")
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--registry-ca: %w", err)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	opts := []sr.ClientOpt{sr.URLs(rf.url), sr.HTTPClient(&http.Client{Timeout: rf.timeout, Transport: transport})}
	if rf.user != "" {
		password := rf.password
		if password == "" {
			password = os.Getenv(registryPasswordEnv)
		}
		opts = append(opts, sr.BasicAuth(rf.user, password))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), rf.timeout)
	if rf.context != "" {
		// Requests go under /contexts/{context}/.
		ctx = sr.InContext(ctx, rf.context)
	}
	return cl, ctx, cancel, nil
}

// schemaFlags read a schema from --file or --schema with its --type and
// --ref references.
type schemaFlags struct {
	file, text, typ string
	refs            []sr.SchemaReference
}

func (sf *schemaFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.file, "file", "", "read the schema from this `file` (- for stdin)")
	fs.StringVar(&sf.text, "schema", "", "the schema `text`")
	fs.StringVar(&sf.typ, "type", "AVRO", "schema `type`: AVRO, JSON or PROTOBUF")
	fs.Func("ref", "a `reference` NAME=SUBJECT:VERSION (a Protobuf import path, an Avro type name...), repeatable", func(v string) error {
		name, sv, ok1 := strings.Cut(v, "=")
		subject, ver, ok2 := strings.Cut(sv, ":")
		n, err := parseSchemaVersion(ver)
		if !ok1 || !ok2 || name == "" || subject == "" || err != nil {
			return errors.New("want NAME=SUBJECT:VERSION")
		}
		sf.refs = append(sf.refs, sr.SchemaReference{Name: name, Subject: subject, Version: n})
		return nil
	})
}

func (sf *schemaFlags) schema() (sr.Schema, error) {
	text := sf.text
	switch {
	case sf.file != "" && sf.text != "":
		return sr.Schema{}, errors.New("give --file or --schema, not both")
	case sf.file == "-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return sr.Schema{}, err
		}
		text = string(b)
	case sf.file != "":
		b, err := os.ReadFile(sf.file)
		if err != nil {
			return sr.Schema{}, err
		}
		text = string(b)
	case sf.text == "":
		return sr.Schema{}, errors.New("give the schema with --file or --schema")
	}
	var t sr.SchemaType
	if err := t.UnmarshalText([]byte(strings.ToUpper(sf.typ))); err != nil {
		return sr.Schema{}, fmt.Errorf("invalid --type %q", sf.typ)
	}
	return sr.Schema{Schema: text, Type: t, References: sf.refs}, nil
}

// parseSchemaVersion reads --version: "latest" or a number (-1 is latest).
func parseSchemaVersion(s string) (int, error) {
	if s == "" || s == "latest" {
		return -1, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v == 0 || v < -1 {
		return 0, fmt.Errorf("invalid --version %q: want a version number or latest", s)
	}
	return v, nil
}

func schemaRegister(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schema register", "samsa schema register SUBJECT (--file F | --schema TEXT) [--type AVRO] [--ref NAME=SUBJECT:VERSION]... [flags]", stderr)
	var rf registryFlags
	var sf schemaFlags
	rf.register(fs)
	sf.register(fs)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one subject, got %d", len(pos))
	}
	s, err := sf.schema()
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	cl, ctx, cancel, err := rf.client()
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	defer cancel()
	id, err := cl.RegisterSchema(ctx, pos[0], s, -1, -1)
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintln(stdout, id)
	return exitOK
}

func schemaGet(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schema get", "samsa schema get (SUBJECT [--version V] | --id N) [flags]", stderr)
	var rf registryFlags
	rf.register(fs)
	id := fs.Int("id", 0, "print the schema with this `id`")
	version := fs.String("version", "latest", "`version` of the subject: a number or latest")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if (*id > 0) == (len(pos) == 1) || len(pos) > 1 {
		return usageError(fs, stderr, "want one subject or --id")
	}
	v, err := parseSchemaVersion(*version)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	cl, ctx, cancel, err := rf.client()
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	defer cancel()
	var text string
	if *id > 0 {
		s, err := cl.SchemaByID(ctx, *id)
		if err != nil {
			return fail(stderr, err)
		}
		text = s.Schema
	} else {
		s, err := cl.SchemaByVersion(ctx, pos[0], v)
		if err != nil {
			return fail(stderr, err)
		}
		text = s.Schema.Schema
	}
	fmt.Fprintln(stdout, text)
	return exitOK
}

func schemaList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schema list", "samsa schema list [SUBJECT] [--deleted] [flags]", stderr)
	var rf registryFlags
	rf.register(fs)
	deleted := fs.Bool("deleted", false, "include soft-deleted subjects or versions")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(fs, stderr, "want at most one subject, got %d", len(pos))
	}
	cl, ctx, cancel, err := rf.client()
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	defer cancel()
	if *deleted {
		ctx = sr.WithParams(ctx, sr.ShowDeleted)
	}
	if len(pos) == 1 {
		vs, err := cl.SubjectVersions(ctx, pos[0])
		if err != nil {
			return fail(stderr, err)
		}
		for _, v := range vs {
			fmt.Fprintln(stdout, v)
		}
		return exitOK
	}
	subjects, err := cl.Subjects(ctx)
	if err != nil {
		return fail(stderr, err)
	}
	for _, s := range subjects {
		fmt.Fprintln(stdout, s)
	}
	return exitOK
}

func schemaDelete(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schema delete", "samsa schema delete SUBJECT [--version V] [--permanent] [flags]", stderr)
	var rf registryFlags
	rf.register(fs)
	version := fs.String("version", "", "delete only this `version` (a number or latest)")
	permanent := fs.Bool("permanent", false, "delete for good what was soft-deleted before")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one subject, got %d", len(pos))
	}
	how := sr.SoftDelete
	if *permanent {
		how = sr.HardDelete
	}
	cl, ctx, cancel, err := rf.client()
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	defer cancel()
	if *version != "" {
		v, err := parseSchemaVersion(*version)
		if err != nil {
			return usageError(fs, stderr, "%v", err)
		}
		if err := cl.DeleteSchema(ctx, pos[0], v, how); err != nil {
			return fail(stderr, err)
		}
		return exitOK
	}
	vs, err := cl.DeleteSubject(ctx, pos[0], how)
	if err != nil {
		return fail(stderr, err)
	}
	for _, v := range vs {
		fmt.Fprintln(stdout, v)
	}
	return exitOK
}

func schemaCompat(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schema compat", "samsa schema compat SUBJECT (--file F | --schema TEXT) [--version V] [flags]", stderr)
	var rf registryFlags
	var sf schemaFlags
	rf.register(fs)
	sf.register(fs)
	version := fs.String("version", "", "check against this `version` only (default: what the subject's compatibility level names)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one subject, got %d", len(pos))
	}
	s, err := sf.schema()
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	v := -2 // every version the level names
	if *version != "" {
		if v, err = parseSchemaVersion(*version); err != nil {
			return usageError(fs, stderr, "%v", err)
		}
	}
	cl, ctx, cancel, err := rf.client()
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	defer cancel()
	res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), pos[0], v, s)
	if err != nil {
		return fail(stderr, err)
	}
	if res.Is {
		fmt.Fprintln(stdout, "compatible")
		return exitOK
	}
	fmt.Fprintln(stdout, "incompatible")
	for _, m := range res.Messages {
		fmt.Fprintln(stdout, "  "+m)
	}
	return exitFail
}
