package kclient_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/servertest"
)

// A Dialer with SASL authenticates as part of the dial: the connection
// it returns serves requests; a refused login fails the dial with
// ErrAuthentication and the server's message, and a connection that
// skips SASL is refused by the listener.
func TestDialSASL(t *testing.T) {
	s := servertest.Start(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="broker-secret";`)
	addr := s.Addr("SASL_PLAINTEXT")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func(pass string) (*kclient.Conn, error) {
		d := kclient.Dialer{SASL: func() sasl.Mechanism { return plain.Auth{User: "broker", Pass: pass}.AsMechanism() }}
		return d.Dial(ctx, addr, "kclient-sasl-test")
	}
	c, err := dial("broker-secret")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		t.Fatalf("metadata after SASL: %v", err)
	}
	if len(resp.(*kmsg.MetadataResponse).Brokers) != 1 {
		t.Fatalf("metadata: %+v", resp)
	}

	_, err = dial("wrong")
	if !errors.Is(err, kclient.ErrAuthentication) || !strings.Contains(err.Error(), "Invalid username or password") {
		t.Fatalf("wrong password: %v", err)
	}

	// Without SASL the listener answers nothing but ApiVersions and the
	// handshake: the first other request closes the connection.
	raw, err := kclient.Dial(ctx, addr, "kclient-no-sasl")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, kclient.ErrClosed) {
		t.Fatalf("metadata without SASL: %v", err)
	}
}

// With a session lifetime (connections.max.reauth.ms) the connection
// stops taking requests before the server would close it, so the caller
// dials again rather than lose a request in flight.
func TestDialSASLSessionLifetime(t *testing.T) {
	s := servertest.Start(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN", "connections.max.reauth.ms=2000",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="broker-secret";`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := kclient.Dialer{SASL: func() sasl.Mechanism { return plain.Auth{User: "broker", Pass: "broker-secret"}.AsMechanism() }}
	c, err := d.Dial(ctx, s.Addr("SASL_PLAINTEXT"), "kclient-sasl-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatalf("metadata within the session: %v", err)
	}
	time.Sleep(1100 * time.Millisecond) // past 2 s less the margin
	if _, err := c.Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, kclient.ErrClosed) {
		t.Fatalf("metadata at the end of the session: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("the connection is not closed")
	}
}
