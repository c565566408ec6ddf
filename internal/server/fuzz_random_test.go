package server

import (
	"math"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/record"
)

// randomizer fills kmsg request structs with random field values for
// FuzzRequests' seed corpus. Sizes are bounded and, half of the time, a
// field gets a plausible value instead (a topic that exists, partition 0,
// -1, a short timeout), so that the seeds pass the handlers' first checks
// and the fuzzer starts from deep paths.
type randomizer struct {
	r      choices
	topics []fuzzTopic
}

// choices are where a randomizer's values come from: a *rand.Rand for
// the seed corpus, the fuzzer's bytes (byteChoices) while fuzzing.
type choices interface {
	IntN(n int) int
	Int64() int64
}

// byteChoices takes one of the fuzzer's bytes per choice, then zeros: a
// mutated byte changes one choice, and an exhausted input ends every
// slice.
type byteChoices struct{ b []byte }

func (c *byteChoices) next() byte {
	if len(c.b) == 0 {
		return 0
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v
}

// IntN is about b*n/256, so a byte's meaning does not depend on n's
// factors.
func (c *byteChoices) IntN(n int) int { return int(uint64(c.next()) * uint64(n) >> 8) }

// Int64 is eight bytes.
func (c *byteChoices) Int64() int64 {
	var v uint64
	for range 8 {
		v = v<<8 | uint64(c.next())
	}
	return int64(v)
}

// fuzzTopic is a topic the fuzz server has, with its id.
type fuzzTopic struct {
	name string
	id   [16]byte
}

var (
	tagsType  = reflect.TypeFor[kmsg.Tags]()
	bytesType = reflect.TypeFor[[]byte]()
	uuidType  = reflect.TypeFor[[16]byte]()
)

// fill sets every field of the request req points to, except its version
// and unknown tags.
func (z *randomizer) fill(req kmsg.Request) {
	z.value(reflect.ValueOf(req).Elem(), "", 0)
}

func (z *randomizer) value(v reflect.Value, name string, depth int) {
	plausible := z.r.IntN(2) == 0
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == tagsType {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Name == "Version" || f.Type == tagsType {
				continue
			}
			z.value(v.Field(i), f.Name, depth+1)
		}
	case reflect.Pointer:
		if z.r.IntN(4) == 0 {
			v.SetZero() // null
			return
		}
		p := reflect.New(v.Type().Elem())
		z.value(p.Elem(), name, depth)
		v.Set(p)
	case reflect.Slice:
		if v.Type() == bytesType {
			v.SetBytes(z.bytes(name))
			return
		}
		n := z.r.IntN(4)
		if depth > 4 {
			n = min(n, 1)
		}
		if !plausible {
			n = z.r.IntN(8)
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			z.value(s.Index(i), name, depth)
		}
		v.Set(s)
	case reflect.Array:
		if v.Type() == uuidType && len(z.topics) > 0 && plausible {
			v.Set(reflect.ValueOf(z.topics[z.r.IntN(len(z.topics))].id))
			return
		}
		for i := range v.Len() {
			v.Index(i).SetUint(uint64(z.r.IntN(256)))
		}
	case reflect.String:
		v.SetString(z.str(name, plausible))
	case reflect.Bool:
		v.SetBool(z.r.IntN(2) == 0)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(z.integer(name, v.Type().Bits(), plausible))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(z.r.IntN(8)))
	case reflect.Float64:
		v.SetFloat([]float64{0, 1, -1, 0.5, math.NaN(), math.Inf(1)}[z.r.IntN(6)])
	}
}

// str is a string for the field name: a topic that exists, a group or
// transactional id the seeds share, a config name, or random text.
func (z *randomizer) str(name string, plausible bool) string {
	if !plausible {
		const alphabet = "abcdefghijklmnopqrstuvwxyz._-0123456789"
		b := make([]byte, z.r.IntN(24))
		for i := range b {
			b[i] = alphabet[z.r.IntN(len(alphabet))]
		}
		if z.r.IntN(8) == 0 {
			return strings.Repeat("x", 250) // past topic name limits
		}
		return string(b)
	}
	lower := strings.ToLower(name)
	switch {
	case strings.Contains(lower, "topic") || name == "Name" || name == "ResourceName" || name == "Names":
		if len(z.topics) > 0 && z.r.IntN(4) != 0 {
			return z.topics[z.r.IntN(len(z.topics))].name
		}
		return []string{"fuzz-new", "__consumer_offsets", "__transaction_state", "1", "fuzz-topic"}[z.r.IntN(5)]
	case strings.Contains(lower, "group"):
		return []string{"fuzz-group", "fuzz-group-2", ""}[z.r.IntN(3)]
	case strings.Contains(lower, "transactional"):
		return []string{"fuzz-txn", "fuzz-txn-2", ""}[z.r.IntN(3)]
	case strings.Contains(lower, "member"):
		return []string{"", "fuzz-member"}[z.r.IntN(2)]
	case strings.Contains(lower, "protocoltype"):
		return "consumer"
	case strings.Contains(lower, "key") || strings.Contains(lower, "config"):
		return []string{"cleanup.policy", "retention.ms", "log.retention.ms", "segment.bytes", "min.insync.replicas", "log.level", "root"}[z.r.IntN(7)]
	case strings.Contains(lower, "value"):
		return []string{"compact", "delete", "1000", "-1", "1", "DEBUG"}[z.r.IntN(6)]
	case strings.Contains(lower, "assignor") || strings.Contains(lower, "protocol"):
		return []string{"range", "uniform", "roundrobin"}[z.r.IntN(3)]
	}
	return "fuzz"
}

// integer is a value for an integer field of the given width; plausible
// values keep timeouts short, so that a seed never waits long.
func (z *randomizer) integer(name string, bits int, plausible bool) int64 {
	if !plausible {
		switch z.r.IntN(4) {
		case 0:
			return int64(z.r.IntN(2))<<(bits-1) - int64(z.r.IntN(2)) // min, -1, 0 or max-ish
		case 1:
			return int64(z.r.IntN(200)) - 100
		}
		return z.r.Int64() >> (64 - bits)
	}
	lower := strings.ToLower(name)
	switch {
	case strings.Contains(lower, "timeout") || strings.Contains(lower, "wait") || strings.Contains(lower, "millis") || strings.Contains(lower, "ms"):
		return int64(z.r.IntN(50))
	case strings.Contains(lower, "partition"):
		return int64(z.r.IntN(3)) - 1
	case strings.Contains(lower, "acks"):
		return int64(z.r.IntN(3)) - 1
	case strings.Contains(lower, "epoch") || strings.Contains(lower, "producerid") || strings.Contains(lower, "offset"):
		return int64(z.r.IntN(4)) - 1
	case strings.Contains(lower, "bytes"):
		return int64(z.r.IntN(1 << 20))
	case strings.Contains(lower, "replication"):
		return int64(z.r.IntN(2)*2) - 1
	case strings.Contains(lower, "num") || strings.Contains(lower, "count"):
		return int64(z.r.IntN(4))
	}
	return int64(z.r.IntN(4)) - 1
}

// bytes is a byte field's value: a valid record batch for Records, else
// a short random slice (nil for null now and then).
func (z *randomizer) bytes(name string) []byte {
	if name == "Records" && z.r.IntN(4) != 0 {
		var recs []record.Record
		for i := range z.r.IntN(3) + 1 {
			recs = append(recs, record.Record{Timestamp: int64(1700000000000 + i), Key: []byte{byte('a' + i)}, Value: []byte("fuzz")})
		}
		opts := record.BuildOptions{PartitionLeaderEpoch: -1}
		if z.r.IntN(3) == 0 {
			opts.Producer = &record.ProducerInfo{ID: int64(z.r.IntN(3)), Epoch: 0, BaseSequence: 0}
			opts.Transactional = z.r.IntN(2) == 0
		}
		if z.r.IntN(3) == 0 {
			opts.Codec = record.CodecGzip
		}
		return record.Build(opts, recs)
	}
	if z.r.IntN(5) == 0 {
		return nil
	}
	b := make([]byte, z.r.IntN(32))
	for i := range b {
		b[i] = byte(z.r.IntN(256))
	}
	return b
}
