package kclient_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/servertest"
)

func TestRequestsArePipelinedAndMatched(t *testing.T) {
	addr := servertest.Addr(servertest.Start(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := kclient.Dial(ctx, addr, "kclient-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "kclient", 3, 1
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 10000
	resp, err := c.Request(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create topic: error code %d", code)
	}

	// Many concurrent requests on one connection each get their own answer.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := kmsg.NewPtrMetadataRequest()
			name := "kclient"
			if i%2 == 1 {
				name = "missing"
			}
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = &name
			req.Topics = append(req.Topics, rt)
			r, err := c.Request(ctx, req)
			if err != nil {
				t.Error(err)
				return
			}
			md := r.(*kmsg.MetadataResponse)
			if len(md.Topics) != 1 || *md.Topics[0].Topic != name {
				t.Errorf("asked for %s, got %+v", name, md.Topics)
				return
			}
			want := 3
			if name == "missing" {
				want = 0
			}
			if got := len(md.Topics[0].Partitions); got != want {
				t.Errorf("%s: %d partitions, want %d", name, got, want)
			}
		}()
	}
	wg.Wait()
}

func TestBrokenConnectionFailsRequests(t *testing.T) {
	addr := servertest.Addr(servertest.Start(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := kclient.Dial(ctx, addr, "kclient-test")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Request(ctx, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Fatal("request on a closed connection succeeded")
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
}
