package main

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestClusterQuorum(t *testing.T) {
	b := startTestCluster(t)
	r := mustRun(t, "", "cluster", "quorum", "--bootstrap", b)
	rows := fields(r.stdout)
	if len(rows) != 5 || strings.Join(rows[0], " ") != "leader: 1" || rows[1][0] != "epoch:" {
		t.Fatalf("output:\n%s", r.stdout)
	}
	hw := rows[2][2]
	if got := strings.Join(rows[3], " "); got != "VOTER STATUS LOG-END-OFFSET LAG LAST-FETCH LAST-CAUGHT-UP" {
		t.Fatalf("header %q", got)
	}
	if v := rows[4]; v[0] != "1" || v[1] != "leader" || v[2] != hw || v[3] != "0" || v[5] != "ago" {
		t.Fatalf("voter row %q (high watermark %s)", v, hw)
	}
}

func TestPrintQuorumLag(t *testing.T) {
	now := time.UnixMilli(100_000)
	voter := func(id int32, end, fetch int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		v.ReplicaID, v.LogEndOffset, v.LastFetchTimestamp, v.LastCaughtUpTimestamp = id, end, fetch, fetch
		return v
	}
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = 2, 7, 40
	p.CurrentVoters = append(p.CurrentVoters, voter(1, 38, 99_750), voter(2, 42, 100_000), voter(3, 0, -1))
	p.Observers = append(p.Observers, voter(5, 41, 99_900))
	var sb strings.Builder
	printQuorum(&sb, p, now)
	want := [][]string{
		{"leader:", "2"}, {"epoch:", "7"}, {"high", "watermark:", "40"},
		{"VOTER", "STATUS", "LOG-END-OFFSET", "LAG", "LAST-FETCH", "LAST-CAUGHT-UP"},
		{"1", "follower", "38", "4", "250ms", "ago", "250ms", "ago"},
		{"2", "leader", "42", "0", "0s", "ago", "0s", "ago"},
		{"3", "follower", "0", "42", "-", "-"},
		{"5", "observer", "41", "1", "100ms", "ago", "100ms", "ago"},
	}
	if got := fields(sb.String()); !equalRows(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
