package main

import (
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--pids", "1:100, 2:200,3:300", "--signal", "sigterm", "--controller", "prefer"})
	if err != nil {
		t.Fatal(err)
	}
	if o.signal != syscall.SIGTERM || o.sigName != "TERM" || o.controller != "prefer" {
		t.Errorf("signal %v %q, controller %q", o.signal, o.sigName, o.controller)
	}
	if len(o.pids) != 3 || o.pids[1] != 100 || o.pids[2] != 200 || o.pids[3] != 300 {
		t.Errorf("pids %v", o.pids)
	}
	for _, args := range [][]string{
		{},                                   // no --pids
		{"--pids", "1:"},                     // no pid
		{"--pids", "x:5"},                    // bad id
		{"--pids", "1:5", "--signal", "HUP"}, // unsupported signal
		{"--pids", "1:5", "--controller", "maybe"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q): no error", args)
		}
	}
}

func TestChoose(t *testing.T) {
	md := kadm.Metadata{Controller: 2}
	td := kadm.TopicDetail{Topic: "t", Partitions: kadm.PartitionDetails{
		0: {Partition: 0, Leader: 2},
		1: {Partition: 1, Leader: 3},
		2: {Partition: 2, Leader: 1},
	}}
	for _, tc := range []struct {
		controller string
		partition  int32
		node       int32
		isCtl      bool
	}{
		{"avoid", 1, 3, false},
		{"prefer", 0, 2, true},
		{"any", 0, 2, true},
	} {
		o := &opts{controller: tc.controller}
		var res result
		if err := o.choose(md, td, &res); err != nil {
			t.Fatalf("%s: %v", tc.controller, err)
		}
		if res.Partition != tc.partition || res.KilledNode != tc.node || res.WasController != tc.isCtl {
			t.Errorf("%s: partition %d node %d controller %t, want %d %d %t", tc.controller,
				res.Partition, res.KilledNode, res.WasController, tc.partition, tc.node, tc.isCtl)
		}
	}
	// Every leader is the controller: nothing to avoid it with.
	one := kadm.TopicDetail{Topic: "t", Partitions: kadm.PartitionDetails{0: {Partition: 0, Leader: 2}}}
	if err := (&opts{controller: "avoid"}).choose(md, one, &result{}); err == nil {
		t.Error("avoid with only the controller leading: no error")
	}
}
