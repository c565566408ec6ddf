package server

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/kclient"
)

// On a SASL controller listener a raft connection logs in before its
// hello: with the right password the listener hands it to the transport
// with the bytes that follow the exchange intact; with a wrong one the
// dial fails naming the credentials; without SASL the connection is
// closed and nothing reaches the transport.
func TestSASLRaftConnections(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" password="%s" user_controller="controller-secret";`
	load := func(pass string) *config.Config {
		cfg, _, err := config.Load("", []string{"log.dirs=/tmp/unused", "node.id=1", "controller.listener.names=CONTROLLER",
			"controller.quorum.voters=1@127.0.0.1:9093,2@127.0.0.1:9095",
			"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
			"sasl.enabled.mechanisms=PLAIN", "sasl.mechanism.controller.protocol=PLAIN",
			"listener.name.controller.plain.sasl.jaas.config=" + strings.Replace(jaas, "%s", pass, 1)})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := load("controller-secret")
	sc, _, err := saslListener(cfg, "CONTROLLER", nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	split := newSplitListener(ln, quiet(), nil, "CONTROLLER", sc, nil)
	defer split.Close()
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialAs := func(pass string) (net.Conn, error) {
		d, err := newNodeDialers(load(pass), &nodeTLS{})
		if err != nil {
			t.Fatal(err)
		}
		return d.controller.raw()(ctx, "tcp", addr)
	}

	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := split.raft.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := dialAs("controller-secret")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(raftMagic + "hello")); err != nil {
		t.Fatal(err)
	}
	var got net.Conn
	select {
	case got = <-accepted:
	case <-ctx.Done():
		t.Fatal("the authenticated raft connection never reached the transport")
	}
	defer got.Close()
	buf := make([]byte, len(raftMagic)+5)
	if _, err := io.ReadFull(got, buf); err != nil || string(buf) != raftMagic+"hello" {
		t.Fatalf("transport read %q, %v", buf, err)
	}

	_, err = dialAs("wrong")
	if !errors.Is(err, kclient.ErrAuthentication) || !strings.Contains(err.Error(), "Invalid username or password") ||
		!strings.Contains(err.Error(), "listener.name.controller.plain.sasl.jaas.config") {
		t.Fatalf("wrong password: %v", err)
	}

	// A raft hello without SASL is closed unread.
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.Write([]byte(raftMagic + "\x01plain hello without SASL"))
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.ReadAll(raw); err != nil || len(n) != 0 {
		t.Fatalf("unauthenticated raft connection: read %q, %v", n, err)
	}
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("an unauthenticated raft connection reached the transport")
	case <-time.After(200 * time.Millisecond):
	}
}
