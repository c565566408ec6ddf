package console

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupRow is one line of the group list.
type groupRow struct {
	Name, State, Type, ProtocolType string
	Coordinator                     int32
	Members                         int
	Lag                             int64
}

func (c *Console) groups(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	listed, err := c.adm.ListGroups(ctx)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "list groups", err)
		return
	}
	lags, _ := c.adm.Lag(ctx, listed.Groups()...)
	var rows []groupRow
	for _, g := range listed.Sorted() {
		row := groupRow{Name: g.Group, State: g.State, Type: g.GroupType, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator, Lag: -1}
		if l, ok := lags[g.Group]; ok && l.Error() == nil {
			row.Members = len(l.Members)
			row.Lag = l.Lag.Total()
			row.State = l.State
		}
		rows = append(rows, row)
	}
	c.render(w, r, "groups", http.StatusOK, page{Section: "groups", Title: "Consumer groups", Data: rows})
}

// lagRow is one partition of a group page.
type lagRow struct {
	Topic     string
	Partition int32
	Committed int64 // -1: nothing committed
	End       int64
	Lag       int64
	Member    string
	Err       string
}

type groupData struct {
	Name         string
	State        string
	Protocol     string
	ProtocolType string
	Coordinator  int32
	Members      []kadm.DescribedGroupMember
	Lag          []lagRow
	TotalLag     int64
	Topics       []string
	Resettable   bool
}

func (c *Console) group(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("group")
	ctx, cancel := c.ctx(r)
	defer cancel()
	lags, err := c.adm.Lag(ctx, name)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "group "+name, err)
		return
	}
	l, ok := lags[name]
	if !ok {
		c.fail(w, r, http.StatusNotFound, "group "+name, fmt.Errorf("no such group"))
		return
	}
	if err := l.Error(); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		c.fail(w, r, http.StatusBadGateway, "group "+name, err)
		return
	}
	if l.State == "Dead" || errors.Is(l.Error(), kerr.GroupIDNotFound) {
		c.fail(w, r, http.StatusNotFound, "group "+name, fmt.Errorf("no such group"))
		return
	}
	d := groupData{Name: name, State: l.State, Protocol: l.Protocol, ProtocolType: l.ProtocolType,
		Coordinator: l.Coordinator.NodeID, Members: l.Members, TotalLag: l.Lag.Total(),
		Resettable: l.State == "Empty"}
	for _, m := range l.Lag.Sorted() {
		row := lagRow{Topic: m.Topic, Partition: m.Partition, Committed: m.Commit.At, End: m.End.Offset, Lag: m.Lag}
		if m.Member != nil {
			row.Member = m.Member.ClientID + " (" + m.Member.ClientHost + ")"
		}
		if m.Err != nil {
			row.Err = m.Err.Error()
		}
		d.Lag = append(d.Lag, row)
		if !slices.Contains(d.Topics, m.Topic) {
			d.Topics = append(d.Topics, m.Topic)
		}
	}
	c.render(w, r, "group", http.StatusOK, page{Section: "groups", Title: name, Data: d})
}

// resetGroup moves a group's committed offsets of one topic (or all its
// topics) to the earliest or latest offset, or to a given offset, as
// kafka-consumer-groups.sh --reset-offsets does. Like Kafka, it refuses
// while the group has members: their commits would overwrite the reset.
func (c *Console) resetGroup(w http.ResponseWriter, r *http.Request) {
	if !c.post(w, r) {
		return
	}
	name := r.PathValue("group")
	topic := r.PostForm.Get("topic")
	to := r.PostForm.Get("to")
	ctx, cancel := c.ctx(r)
	defer cancel()
	lags, err := c.adm.Lag(ctx, name)
	l := lags[name]
	if err == nil {
		err = l.Error()
	}
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, kerr.GroupIDNotFound) {
			status = http.StatusNotFound
		}
		c.fail(w, r, status, "group "+name, err)
		return
	}
	if l.State != "Empty" {
		c.fail(w, r, http.StatusConflict, "reset "+name,
			fmt.Errorf("the group is %s: stop its consumers first (Kafka resets offsets only of an inactive group)", l.State))
		return
	}
	var topics []string
	for _, m := range l.Lag.Sorted() {
		if (topic == "" || m.Topic == topic) && !slices.Contains(topics, m.Topic) {
			topics = append(topics, m.Topic)
		}
	}
	if len(topics) == 0 {
		c.fail(w, r, http.StatusBadRequest, "reset "+name, fmt.Errorf("the group has no committed offsets for %q", topic))
		return
	}
	var listed kadm.ListedOffsets
	var at int64
	switch to {
	case "earliest":
		listed, err = c.adm.ListStartOffsets(ctx, topics...)
	case "latest":
		listed, err = c.adm.ListEndOffsets(ctx, topics...)
	case "offset":
		n, ferr := formInt(r, "offset", -1)
		if ferr != nil || n < 0 {
			c.fail(w, r, http.StatusBadRequest, "reset "+name, fmt.Errorf("offset %q is not an offset", r.PostForm.Get("offset")))
			return
		}
		at = int64(n)
	default:
		c.fail(w, r, http.StatusBadRequest, "reset "+name, fmt.Errorf("to %q: want earliest, latest or offset", to))
		return
	}
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "reset "+name, err)
		return
	}
	offsets := kadm.Offsets{}
	for _, m := range l.Lag.Sorted() {
		if !slices.Contains(topics, m.Topic) {
			continue
		}
		o := kadm.Offset{Topic: m.Topic, Partition: m.Partition, At: at, LeaderEpoch: -1}
		if listed != nil {
			lo, ok := listed.Lookup(m.Topic, m.Partition)
			if !ok || lo.Err != nil {
				c.fail(w, r, http.StatusBadGateway, "reset "+name, fmt.Errorf("%s-%d: no offset", m.Topic, m.Partition))
				return
			}
			o.At = lo.Offset
		}
		offsets.Add(o)
	}
	resps, err := c.adm.CommitOffsets(ctx, name, offsets)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "reset "+name, err)
		return
	}
	c.done(w, r, c.path("groups", name), fmt.Sprintf("reset %s of %s to %s", strings.Join(topics, ", "), name, to))
}
