package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// subcommandsRe finds the subcommands a command's usage names:
// "usage: samsa topic <create|list|...>".
var subcommandsRe = regexp.MustCompile(`usage: samsa [a-z-]+ <([a-z|-]+)>`)

// Every command and every subcommand answers -h and --help with its
// usage on stdout and exit status 0, as a user piping it into a pager
// expects; nothing goes to stderr.
func TestHelpEverywhere(t *testing.T) {
	var lines [][]string
	for _, c := range commands() {
		for _, h := range []string{"-h", "--help"} {
			lines = append(lines, []string{c.name, h})
		}
		var out bytes.Buffer
		run([]string{c.name, "-h"}, strings.NewReader(""), &out, &out)
		if m := subcommandsRe.FindStringSubmatch(out.String()); m != nil {
			for _, sub := range strings.Split(m[1], "|") {
				lines = append(lines, []string{c.name, sub, "-h"}, []string{c.name, sub, "--help"})
			}
		}
	}
	lines = append(lines, []string{"dev", "cluster", "-h"}, []string{"server", "--config", "x.properties", "-h"}, []string{"-h"}, []string{"--help"}, []string{"help"})
	if len(lines) < 80 {
		t.Fatalf("only %d help command lines: the subcommands were not found", len(lines))
	}
	for _, args := range lines {
		var stdout, stderr bytes.Buffer
		code := run(args, strings.NewReader(""), &stdout, &stderr)
		if code != 0 || !strings.Contains(stdout.String(), "usage:") || stderr.Len() != 0 {
			t.Errorf("samsa %s: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout",
				strings.Join(args, " "), code, trim(stdout.String()), trim(stderr.String()))
		}
	}
}

func trim(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// A mistyped command exits 2 with a hint naming the command meant;
// no command at all prints the usage on stderr and exits 2.
func TestUnknownCommand(t *testing.T) {
	for _, tc := range []struct{ arg, hint string }{
		{"topics", `Did you mean "topic"?`},
		{"grop", `Did you mean "group"?`},
		{"consumer", `Did you mean "consume"?`},
		{"xyzzy", ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{tc.arg}, strings.NewReader(""), &stdout, &stderr)
		if code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), `unknown command "`+tc.arg+`"`) ||
			!strings.Contains(stderr.String(), "samsa --help") {
			t.Errorf("samsa %s: exit %d, stdout %q, stderr %q", tc.arg, code, stdout.String(), stderr.String())
		}
		if got := strings.Contains(stderr.String(), "Did you mean"); tc.hint == "" && got || tc.hint != "" && !strings.Contains(stderr.String(), tc.hint) {
			t.Errorf("samsa %s: stderr %q, want hint %q", tc.arg, stderr.String(), tc.hint)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(nil, strings.NewReader(""), &stdout, &stderr); code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "usage: samsa <command>") {
		t.Errorf("samsa: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"topic", "lst"}, strings.NewReader(""), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `unknown subcommand "lst"`) {
		t.Errorf("samsa topic lst: exit %d, stderr %q", code, stderr.String())
	}
}

// samsa --version prints one line naming samsa and the Go version.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		var stdout, stderr bytes.Buffer
		code := run([]string{arg}, strings.NewReader(""), &stdout, &stderr)
		out := stdout.String()
		if code != 0 || !strings.HasPrefix(out, "samsa ") || !strings.Contains(out, " go1.") || strings.Count(out, "\n") != 1 || stderr.Len() != 0 {
			t.Errorf("samsa %s: exit %d, stdout %q, stderr %q", arg, code, out, stderr.String())
		}
	}
}
