package kclient_test

import (
	"context"
	"errors"
	"fmt"
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
// retires before the server would close it: a request sent after that
// is not sent (ErrSessionExpired, for the caller to send on a new
// connection), a request already in flight still gets its answer, and
// the connection closes after it.
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
	// The session is 2 s; the connection retires 1 s in.
	start := time.Now()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "quiet", 1, 1
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 5000
	cr, err := c.Request(ctx, create)
	if err != nil || cr.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic within the session: %v %+v", err, cr)
	}

	// A fetch of the empty topic waits its 1.2 s, past the retirement.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = -1, 1200, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "quiet", cr.(*kmsg.CreateTopicsResponse).Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fetched := make(chan error, 1)
	go func() {
		resp, err := c.Request(ctx, fetch)
		if err == nil && resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			err = fmt.Errorf("fetch answered %d", resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode)
		}
		fetched <- err
	}()

	time.Sleep(time.Until(start.Add(1100 * time.Millisecond)))
	if _, err := c.Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, kclient.ErrSessionExpired) || !errors.Is(err, kclient.ErrClosed) {
		t.Fatalf("metadata at the end of the session: %v, want %v", err, kclient.ErrSessionExpired)
	}
	if err := <-fetched; err != nil {
		t.Fatalf("the fetch in flight when the session ended: %v", err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the connection is not closed after its last answer")
	}
}
