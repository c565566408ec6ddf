package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A client or controller port already taken stops `samsa server` with a
// message naming the listener and address, before the data directory is
// formatted: no meta.properties (and no cluster id) is left behind, and
// the same directory starts cleanly once the port is free.
func TestServerPortInUseFormatsNothing(t *testing.T) {
	for _, taken := range []string{"PLAINTEXT", "CONTROLLER"} {
		t.Run(taken, func(t *testing.T) {
			held, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			addr := held.Addr().String()
			client, ctrl := addr, "127.0.0.1:0"
			voters := "1@127.0.0.1:1"
			if taken == "CONTROLLER" {
				// With several voters the controller listener is bound.
				client, ctrl = "127.0.0.1:0", addr
				voters = "1@" + addr + ",2@127.0.0.1:1"
			}
			dir := filepath.Join(t.TempDir(), "data")
			var out, errb strings.Builder
			code := run([]string{"server",
				"--override", "log.dirs=" + dir,
				"--override", "listeners=PLAINTEXT://" + client + ",CONTROLLER://" + ctrl,
				"--override", "controller.quorum.voters=" + voters,
				"--override", "schema.registry.listeners=", "--override", "rest.proxy.listeners=",
				"--cluster-id", "MkU3OEVBNTcwNTJENDM2Qg",
			}, nil, &out, &errb)
			if code != 1 || !strings.Contains(errb.String(), "listen on "+taken+" ("+addr+")") ||
				!strings.Contains(errb.String(), "address already in use") {
				t.Fatalf("exit %d, stderr %q: want exit 1 naming %s %s", code, errb.String(), taken, addr)
			}
			if _, err := os.Stat(filepath.Join(dir, "meta.properties")); !os.IsNotExist(err) {
				t.Fatalf("the data directory was formatted before the bind failed: %v", err)
			}
		})
	}
}
