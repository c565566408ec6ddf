package main

// --format on the listing commands: text (tables for people) or json
// (for scripts and jq).

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
)

// formatFlag registers --format on a listing command.
func formatFlag(fs *flag.FlagSet) *string {
	return fs.String("format", "text", "output `format`: text (a table) or json")
}

// checkFormat refuses a --format value other than text and json.
func checkFormat(f string) error {
	if f != "text" && f != "json" {
		return fmt.Errorf("invalid --format %q: want text or json", f)
	}
	return nil
}

// writeJSON prints v as indented JSON and a newline.
func writeJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return exitOK
}
