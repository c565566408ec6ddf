package main

// `samsa quota`: client quotas (AlterClientQuotas, DescribeClientQuotas),
// what `kafka-configs.sh --entity-type users|clients|ips` does for quotas.
// An entity is a user, a client id, both, or an IP address, each a name or
// the default ("<default>", as Kafka prints it).

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

const quotaUsage = `usage: samsa quota <set|list|delete> [flags]

  set      set quotas of an entity: --producer-byte-rate N, ..., --set key=value
  list     list quotas, all or those of the entities the flags name
  delete   delete an entity's quotas (all, or the --key ones)

An entity is --user NAME, --client-id NAME (or both), or --ip ADDRESS;
"<default>" names the default of its kind. These commands log in with
--sasl-user and --sasl-password. Run "samsa quota <subcommand> -h" for the
flags of each.
`

// defaultEntity is how Kafka's tools write the default entity of a kind.
const defaultEntity = "<default>"

func runQuota(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("quota", quotaUsage, map[string]subcommand{
		"set":    quotaSet,
		"list":   quotaList,
		"delete": quotaDelete,
	}, args, stdout, stderr)
}

// optString is a string flag that knows whether it was given.
type optString struct {
	set bool
	v   string
}

func (o *optString) String() string     { return o.v }
func (o *optString) Set(s string) error { o.set, o.v = true, s; return nil }

// entityFlags name a quota entity.
type entityFlags struct {
	user, clientID, ip optString
}

func (e *entityFlags) registerOn(add func(v *optString, name, usage string)) {
	add(&e.user, "user", "the user `name` (or \"<default>\") the quota is for")
	add(&e.clientID, "client-id", "the client `id` (or \"<default>\") the quota is for")
	add(&e.ip, "ip", "the IP `address` (or \"<default>\") the quota is for")
}

// entity is the entity the flags name, in Kafka's order.
func (e *entityFlags) entity() kadm.ClientQuotaEntity {
	var out kadm.ClientQuotaEntity
	for _, c := range []struct {
		typ string
		o   optString
	}{{"user", e.user}, {"client-id", e.clientID}, {"ip", e.ip}} {
		if !c.o.set {
			continue
		}
		var name *string
		if c.o.v != defaultEntity {
			name = &c.o.v
		}
		out = append(out, kadm.ClientQuotaEntityComponent{Type: c.typ, Name: name})
	}
	return out
}

// quotaKeys are the flags for the quota keys Kafka knows.
var quotaKeys = []struct{ flag, key, usage string }{
	{"producer-byte-rate", "producer_byte_rate", "produce `bytes` per second"},
	{"consumer-byte-rate", "consumer_byte_rate", "fetch `bytes` per second"},
	{"request-percentage", "request_percentage", "`percent` of a request handler thread's time"},
	{"controller-mutation-rate", "controller_mutation_rate", "topic and partition `mutations` per second"},
	{"connection-creation-rate", "connection_creation_rate", "new `connections` per second (with --ip)"},
}

func quotaSet(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("quota set", "samsa quota set (--user U|--client-id C|--ip A) [--producer-byte-rate N ...] [--set key=value ...] [flags]", stderr)
	var cf clientFlags
	cf.registerNoLoginAliases(fs)
	var e entityFlags
	e.registerOn(func(v *optString, name, usage string) { fs.Var(v, name, usage) })
	values := make([]optString, len(quotaKeys))
	for i, k := range quotaKeys {
		fs.Var(&values[i], k.flag, "set "+k.key+": "+k.usage)
	}
	var generic kvList
	fs.Var(&generic, "set", "set any quota `key=value` (repeatable), e.g. producer_byte_rate=1048576")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	entity := e.entity()
	if len(entity) == 0 {
		return usageError(fs, stderr, "name the entity: --user, --client-id or --ip")
	}
	var ops []kadm.AlterClientQuotaOp
	addOp := func(key, value string) error {
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("invalid value %q for %s: want a number", value, key)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: key, Value: f})
		return nil
	}
	for i, k := range quotaKeys {
		if values[i].set {
			if err := addOp(k.key, values[i].v); err != nil {
				return usageError(fs, stderr, "%v", err)
			}
		}
	}
	for i, k := range generic.keys {
		if err := addOp(k, generic.values[i]); err != nil {
			return usageError(fs, stderr, "%v", err)
		}
	}
	if len(ops) == 0 {
		return usageError(fs, stderr, "nothing to set: give --producer-byte-rate, --consumer-byte-rate, ... or --set key=value")
	}
	return alterQuotas(&cf, entity, ops, "set", stdout, stderr)
}

func quotaDelete(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("quota delete", "samsa quota delete (--user U|--client-id C|--ip A) [--key KEY ...] [flags]", stderr)
	var cf clientFlags
	cf.registerNoLoginAliases(fs)
	var e entityFlags
	e.registerOn(func(v *optString, name, usage string) { fs.Var(v, name, usage) })
	var keys stringList
	fs.Var(&keys, "key", "delete only this quota `key` (repeatable; default: every quota of the entity)")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	entity := e.entity()
	if len(entity) == 0 {
		return usageError(fs, stderr, "name the entity: --user, --client-id or --ip")
	}
	if len(keys) == 0 {
		// Every key the entity has now.
		adm, err := cf.admin()
		if err != nil {
			return fail(stderr, err)
		}
		ctx, cancel := cf.ctx()
		qs, err := adm.DescribeClientQuotas(ctx, true, exactMatch(entity))
		cancel()
		adm.Close()
		if err != nil {
			return fail(stderr, fmt.Errorf("describe quotas of %s: %w", entity, kafkaErr(err, "")))
		}
		for _, q := range qs {
			for _, v := range q.Values {
				keys = append(keys, v.Key)
			}
		}
		if len(keys) == 0 {
			return fail(stderr, fmt.Errorf("%s has no quotas", entity))
		}
	}
	var ops []kadm.AlterClientQuotaOp
	for _, k := range keys {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	return alterQuotas(&cf, entity, ops, "deleted", stdout, stderr)
}

// exactMatch is the describe filter of exactly entity.
func exactMatch(entity kadm.ClientQuotaEntity) []kadm.DescribeClientQuotaComponent {
	var out []kadm.DescribeClientQuotaComponent
	for _, c := range entity {
		d := kadm.DescribeClientQuotaComponent{Type: c.Type, MatchName: c.Name, MatchType: 0}
		if c.Name == nil {
			d.MatchType = 1 // the default entity of the kind
		}
		out = append(out, d)
	}
	return out
}

func alterQuotas(cf *clientFlags, entity kadm.ClientQuotaEntity, ops []kadm.AlterClientQuotaOp, verb string, stdout, stderr io.Writer) int {
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
	if err != nil {
		return fail(stderr, fmt.Errorf("alter quotas of %s: %w", entity, kafkaErr(err, "")))
	}
	for _, r := range res {
		if r.Err != nil {
			return fail(stderr, fmt.Errorf("alter quotas of %s: %w", entity, kafkaErr(r.Err, r.ErrMessage)))
		}
	}
	var parts []string
	for _, op := range ops {
		if op.Remove {
			parts = append(parts, op.Key)
		} else {
			parts = append(parts, op.Key+"="+formatQuota(op.Value))
		}
	}
	fmt.Fprintf(stdout, "%s %s for %s\n", verb, strings.Join(parts, ", "), entity)
	return exitOK
}

func quotaList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("quota list", "samsa quota list [--user U] [--client-id C] [--ip A] [flags]", stderr)
	var cf clientFlags
	cf.registerNoLoginAliases(fs)
	var e entityFlags
	e.registerOn(func(v *optString, name, usage string) { fs.Var(v, name, usage) })
	strict := fs.Bool("strict", false, "only entities with exactly the kinds named (--user alone leaves out user+client-id entities)")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	qs, err := adm.DescribeClientQuotas(ctx, *strict, exactMatch(e.entity()))
	if err != nil {
		return fail(stderr, fmt.Errorf("list quotas: %w", kafkaErr(err, "")))
	}
	type row struct{ entity, key, value string }
	var rows []row
	for _, q := range qs {
		for _, v := range q.Values {
			rows = append(rows, row{entityString(q.Entity), v.Key, formatQuota(v.Value)})
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		if c := strings.Compare(a.entity, b.entity); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTITY\tKEY\tVALUE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.entity, r.key, r.value)
	}
	tw.Flush()
	return exitOK
}

// entityString writes an entity as user=alice,client-id=<default>, its
// parts in Kafka's order whatever order the broker sent them in.
func entityString(entity kadm.ClientQuotaEntity) string {
	order := map[string]int{"user": 0, "client-id": 1, "ip": 2}
	cs := slices.Clone(entity)
	slices.SortFunc(cs, func(a, b kadm.ClientQuotaEntityComponent) int { return order[a.Type] - order[b.Type] })
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, ",")
}

func formatQuota(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
