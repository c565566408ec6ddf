package main

// `samsa user`: SCRAM credentials (AlterUserScramCredentials and
// DescribeUserScramCredentials), what `kafka-configs.sh --entity-type users
// --add-config 'SCRAM-SHA-256=[...]'` does. The client salts the password;
// only the salted form goes to the cluster.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

const userUsage = `usage: samsa user <create|list|delete> [flags]

  create NAME    create or change a user's SCRAM credential for one mechanism
  list [NAME…]   list users with SCRAM credentials, their mechanisms and iterations
  delete NAME    delete a user's credential for one mechanism

These commands log in with --sasl-user and --sasl-password (--password is
the credential's). Run "samsa user <subcommand> -h" for the flags of each.
`

// newPasswordEnv holds the password of the credential user create makes,
// when --password is not given.
const newPasswordEnv = "SAMSA_USER_PASSWORD"

func runUser(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return dispatch("user", userUsage, map[string]subcommand{
		"create": func(args []string, stdout, stderr io.Writer) int { return userCreate(args, stdin, stdout, stderr) },
		"list":   userList,
		"delete": userDelete,
	}, args, stdout, stderr)
}

// parseMechanism reads a --mechanism value.
func parseMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("invalid --mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

func userCreate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("user create", "samsa user create NAME --mechanism SCRAM-SHA-256|SCRAM-SHA-512 [flags]", stderr)
	var cf clientFlags
	cf.registerNoLoginAliases(fs)
	mech := fs.String("mechanism", "SCRAM-SHA-256", "SCRAM `mechanism`: SCRAM-SHA-256 or SCRAM-SHA-512")
	iterations := fs.Int("iterations", 4096, "PBKDF2 iterations (the broker accepts 4096 to 16384)")
	password := fs.String("password", "", "the user's new `password` (default: $"+newPasswordEnv+", else the first line of stdin)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one user name, got %d", len(pos))
	}
	m, err := parseMechanism(*mech)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	pw := *password
	if pw == "" {
		pw = os.Getenv(newPasswordEnv)
	}
	if pw == "" {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fail(stderr, fmt.Errorf("read the password from stdin: %w", err))
		}
		pw = strings.TrimRight(line, "\r\n")
	}
	if pw == "" {
		return usageError(fs, stderr, "no password: give --password, set $%s, or write it on stdin", newPasswordEnv)
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	name := pos[0]
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: name, Mechanism: m, Iterations: int32(*iterations), Password: pw}})
	if err != nil {
		return fail(stderr, fmt.Errorf("create user %q: %w", name, kafkaErr(err, "")))
	}
	if r := res[name]; r.Err != nil {
		return fail(stderr, fmt.Errorf("create user %q: %w", name, kafkaErr(r.Err, r.ErrMessage)))
	}
	fmt.Fprintf(stdout, "created %s credential for user %s (%d iterations)\n", m, name, *iterations)
	return exitOK
}

func userList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("user list", "samsa user list [NAME...] [flags]", stderr)
	var cf clientFlags
	cf.registerNoLoginAliases(fs)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	users, err := adm.DescribeUserSCRAMs(ctx, pos...)
	if err != nil {
		return fail(stderr, fmt.Errorf("list users: %w", kafkaErr(err, "")))
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
	var failed error
	for _, u := range users.Sorted() {
		if u.Err != nil {
			if failed == nil {
				failed = fmt.Errorf("user %q: %w", u.User, kafkaErr(u.Err, u.ErrMessage))
			}
			continue
		}
		for _, c := range u.CredInfos {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", u.User, c.Mechanism, c.Iterations)
		}
	}
	tw.Flush()
	if failed != nil {
		return fail(stderr, failed)
	}
	return exitOK
}

func userDelete(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("user delete", "samsa user delete NAME --mechanism SCRAM-SHA-256|SCRAM-SHA-512 [flags]", stderr)
	var cf clientFlags
	cf.registerNoLoginAliases(fs)
	mech := fs.String("mechanism", "", "the SCRAM `mechanism` whose credential to delete (required)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one user name, got %d", len(pos))
	}
	m, err := parseMechanism(*mech)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	name := pos[0]
	res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: name, Mechanism: m}}, nil)
	if err != nil {
		return fail(stderr, fmt.Errorf("delete user %q: %w", name, kafkaErr(err, "")))
	}
	if r := res[name]; r.Err != nil {
		return fail(stderr, fmt.Errorf("delete user %q: %w", name, kafkaErr(r.Err, r.ErrMessage)))
	}
	fmt.Fprintf(stdout, "deleted %s credential of user %s\n", m, name)
	return exitOK
}
