package controller

import (
	"bufio"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

// The controller's decisions as behaviour: each testdata/*.txt script is a
// list of commands against a one-voter controller with a manual clock; the
// golden file beside it (*.golden, regenerated with -rewrite) holds every
// command with the answer the controller gave and the metadata image after
// it.
//
// Commands:
//
//	register ID [rack=R]             BrokerRegistration, then a heartbeat that unfences
//	heartbeat ID [shutdown]          BrokerHeartbeat (shutdown: WantShutDown)
//	advance DURATION                 move the clock, then run the controller's periodic tick
//	create NAME partitions=N rf=R [K=V...]   CreateTopics (K=V: topic configs)
//	create-partitions NAME count=N   CreatePartitions
//	delete NAME                      DeleteTopics
//	elect preferred|unclean TOPIC P  ElectLeaders
//	isr TOPIC P ID...                AlterPartition from the leader with the new ISR
//	reassign TOPIC P ID...           AlterPartitionReassignments
//	config topic|broker NAME K=V     IncrementalAlterConfigs SET
//
// Lines starting with # are copied to the output as section titles.
func TestControllerScripts(t *testing.T) {
	scripts, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range scripts {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			s := newScript(t)
			var out strings.Builder
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				switch {
				case line == "":
					continue
				case strings.HasPrefix(line, "#"):
					fmt.Fprintf(&out, "\n%s\n", line)
					continue
				}
				fmt.Fprintf(&out, "> %s\n", line)
				fmt.Fprintf(&out, "%s", s.run(strings.Fields(line)))
				fmt.Fprintf(&out, "%s", dumpImage(s.h.loader.Image()))
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, strings.TrimSuffix(path, ".txt")+".golden", out.String())
		})
	}
}

type script struct {
	t      *testing.T
	h      *harness
	now    time.Time
	epochs map[int32]int64 // broker epochs from registration
}

func newScript(t *testing.T) *script {
	s := &script{t: t, now: time.Unix(1_700_000_000, 0), epochs: map[int32]int64{}}
	s.h = startWith(t, t.TempDir(), 0, func(c *Config) {
		c.Now = func() time.Time { return s.now }
		c.SessionTimeout = 9 * time.Second
	})
	return s
}

// run executes one command and returns its answer as text.
func (s *script) run(args []string) string {
	t := s.t
	t.Helper()
	c, cmd, args := s.h.c, args[0], args[1:]
	kv := keyValues(args)
	switch cmd {
	case "register":
		id := atoi(t, args[0])
		var rack *string
		if r, ok := kv["rack"]; ok {
			rack = &r
		}
		ep := []metadata.Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(9091 + id)}}
		epoch, err := registerBroker(ctx(t), c, id, metadata.Uuid{byte(id), 7}, ep, rack)
		if err != nil {
			return fmt.Sprintf("error %v\n", err)
		}
		s.epochs[id] = epoch
		return "ok\n"
	case "heartbeat":
		id := atoi(t, args[0])
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch = id, s.epochs[id]
		req.CurrentMetadataOffset = int64(s.h.loader.Image().Offset)
		req.WantShutdown = slices.Contains(args, "shutdown")
		r := c.BrokerHeartbeat(ctx(t), req)
		return fmt.Sprintf("%s fenced=%v caughtUp=%v shutdownNow=%v\n", code(r.ErrorCode), r.IsFenced, r.IsCaughtUp, r.ShouldShutdown)
	case "advance":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			t.Fatal(err)
		}
		s.now = s.now.Add(d)
		if err := c.tick(ctx(t)); err != nil {
			return fmt.Sprintf("tick error %v\n", err)
		}
		return "ok\n"
	case "create":
		tp := topic(args[0], int32(atoi(t, kv["partitions"])), int16(atoi(t, kv["rf"])))
		for _, k := range slices.Sorted(maps.Keys(kv)) {
			if k != "partitions" && k != "rf" {
				cfg := kmsg.NewCreateTopicsRequestTopicConfig()
				cfg.Name, cfg.Value = k, str(kv[k])
				tp.Configs = append(tp.Configs, cfg)
			}
		}
		r := c.CreateTopics(ctx(t), createReq(tp)).Topics[0]
		return answer(r.ErrorCode, r.ErrorMessage)
	case "create-partitions":
		req := kmsg.NewPtrCreatePartitionsRequest()
		tp := kmsg.NewCreatePartitionsRequestTopic()
		tp.Topic, tp.Count = args[0], int32(atoi(t, kv["count"]))
		req.Topics = append(req.Topics, tp)
		r := c.CreatePartitions(ctx(t), req).Topics[0]
		return answer(r.ErrorCode, r.ErrorMessage)
	case "delete":
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = 6
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = &args[0]
		req.Topics = append(req.Topics, dt)
		r := c.DeleteTopics(ctx(t), req).Topics[0]
		return answer(r.ErrorCode, r.ErrorMessage)
	case "elect":
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version = 2
		req.ElectionType = map[string]int8{"preferred": 0, "unclean": 1}[args[0]]
		et := kmsg.NewElectLeadersRequestTopic()
		et.Topic, et.Partitions = args[1], []int32{int32(atoi(t, args[2]))}
		req.Topics = append(req.Topics, et)
		r := c.ElectLeaders(ctx(t), req)
		if r.ErrorCode != 0 {
			return answer(r.ErrorCode, nil)
		}
		p := r.Topics[0].Partitions[0]
		return answer(p.ErrorCode, p.ErrorMessage)
	case "isr":
		ti, ok := s.h.loader.Image().Topic(args[0])
		if !ok {
			return "no such topic\n"
		}
		part := ti.Partitions[atoi(t, args[1])]
		req := kmsg.NewPtrAlterPartitionRequest()
		req.Version = 3
		req.BrokerID, req.BrokerEpoch = part.Leader, s.epochs[part.Leader]
		at := kmsg.NewAlterPartitionRequestTopic()
		at.TopicID = ti.ID
		ap := kmsg.NewAlterPartitionRequestTopicPartition()
		ap.Partition, ap.LeaderEpoch, ap.PartitionEpoch = part.Partition, part.LeaderEpoch, part.PartitionEpoch
		for _, a := range args[2:] {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = int32(atoi(t, a)), -1
			ap.NewEpochISR = append(ap.NewEpochISR, e)
		}
		at.Partitions = append(at.Partitions, ap)
		req.Topics = append(req.Topics, at)
		r := c.AlterPartition(ctx(t), req)
		if r.ErrorCode != 0 {
			return answer(r.ErrorCode, nil)
		}
		return answer(r.Topics[0].Partitions[0].ErrorCode, nil)
	case "reassign":
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = args[0]
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition = int32(atoi(t, args[1]))
		for _, a := range args[2:] {
			rp.Replicas = append(rp.Replicas, int32(atoi(t, a)))
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r := c.AlterPartitionReassignments(ctx(t), req)
		if r.ErrorCode != 0 {
			return answer(r.ErrorCode, r.ErrorMessage)
		}
		p := r.Topics[0].Partitions[0]
		return answer(p.ErrorCode, p.ErrorMessage)
	case "config":
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceTypeTopic
		if args[0] == "broker" {
			res.ResourceType = kmsg.ConfigResourceTypeBroker
		}
		res.ResourceName = args[1]
		for _, k := range slices.Sorted(maps.Keys(keyValues(args[2:]))) {
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Value = k, str(kv[k])
			res.Configs = append(res.Configs, cfg)
		}
		req.Resources = append(req.Resources, res)
		r := c.IncrementalAlterConfigs(ctx(t), req).Resources[0]
		return answer(r.ErrorCode, r.ErrorMessage)
	}
	t.Fatalf("unknown command %q", cmd)
	return ""
}

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.golden")

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs (run with -rewrite to accept):\n--- got\n%s", path, got)
	}
}

func keyValues(args []string) map[string]string {
	kv := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

func atoi(t *testing.T, s string) int32 {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return int32(n)
}

func code(c int16) string {
	if err := kerr.ErrorForCode(c); err != nil {
		return err.(*kerr.Error).Message
	}
	return "ok"
}

func answer(c int16, msg *string) string {
	if msg != nil && *msg != "" && c != 0 {
		return fmt.Sprintf("%s: %s\n", code(c), *msg)
	}
	return code(c) + "\n"
}

// dumpImage renders what the controller decided: brokers and their
// fencing, topics (by name; ids are random) with each partition's
// replicas, ISR, leader and epochs, and configs.
func dumpImage(img *metadata.Image) string {
	var b strings.Builder
	for _, br := range img.Brokers() {
		fmt.Fprintf(&b, "  broker %d fenced=%v shutdown=%v", br.ID, br.Fenced, br.InControlledShutdown)
		if br.Rack != nil {
			fmt.Fprintf(&b, " rack=%s", *br.Rack)
		}
		b.WriteString("\n")
	}
	for _, t := range img.Topics() {
		fmt.Fprintf(&b, "  topic %s", t.Name)
		if cfg := img.Configs(metadata.ResourceTopic, t.Name); len(cfg) > 0 {
			fmt.Fprintf(&b, " configs=%v", cfg)
		}
		b.WriteString("\n")
		for _, p := range t.Partitions {
			fmt.Fprintf(&b, "    p%d leader=%d epoch=%d pepoch=%d replicas=%v isr=%v", p.Partition, p.Leader, p.LeaderEpoch, p.PartitionEpoch, p.Replicas, p.ISR)
			if len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0 {
				fmt.Fprintf(&b, " adding=%v removing=%v", p.AddingReplicas, p.RemovingReplicas)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
