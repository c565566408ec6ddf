package main

// `samsa consume`: print the records of a topic, like
// kafka-console-consumer.sh, kcat -C and `rpk topic consume`. It reads
// partitions directly (no consumer group, nothing committed).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const consumeSynopsis = `samsa consume TOPIC [flags]

Prints one line per record, by default "PARTITION<TAB>OFFSET<TAB>KEY<TAB>VALUE"
(a null key prints as empty). Starts at the beginning of every partition
unless --from says otherwise, reads no consumer group and commits nothing.
Runs until interrupted, until --num records were printed, or, with
--exit-at-end, until the end offsets seen at start-up were reached.

--from:   beginning | end | OFFSET (in every partition read) | @TIMESTAMP_MS
--format: a kcat-style template; write \n yourself, as in kcat:
          %t topic  %p partition  %o offset  %k key  %v value
          %h headers as k=v,k=v  %T timestamp (ms)  %% a percent sign
          escapes \n \t \r \\`

const defaultConsumeFormat = `%p\t%o\t%k\t%v\n`

// consumeOpts is the parsed command line of `samsa consume`.
type consumeOpts struct {
	cf        clientFlags
	topic     string
	from      string
	partition int
	num       int
	format    string
	exitAtEnd bool
}

func runConsume(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("consume", consumeSynopsis, stderr)
	var o consumeOpts
	o.cf.register(fs)
	fs.StringVar(&o.from, "from", "beginning", "where to start: beginning, end, OFFSET or @TIMESTAMP_MS")
	fs.IntVar(&o.partition, "partition", -1, "read only this partition (-1: all)")
	fs.IntVar(&o.num, "num", 0, "exit after printing this many records (0: no limit)")
	fs.StringVar(&o.format, "format", defaultConsumeFormat, "output `template` per record (see above)")
	fs.BoolVar(&o.exitAtEnd, "exit-at-end", false, "exit once the end offsets seen at start are reached")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one topic, got %d arguments", len(pos))
	}
	o.topic = pos[0]
	from, err := parseFrom(o.from)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	tmpl, err := compileFormat(o.format)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if o.num < 0 || o.partition < -1 {
		return usageError(fs, stderr, "--num and --partition must not be negative")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	plan, err := o.resolve(from)
	if err != nil {
		return fail(stderr, err)
	}
	return o.consume(ctx, plan, tmpl, stdout, stderr)
}

// fromSpec is a parsed --from: kind is "beginning", "end", "offset" or
// "time"; n is the offset or the millisecond timestamp.
type fromSpec struct {
	kind string
	n    int64
}

func parseFrom(s string) (fromSpec, error) {
	switch {
	case s == "beginning" || s == "start" || s == "earliest":
		return fromSpec{kind: "beginning"}, nil
	case s == "end" || s == "latest":
		return fromSpec{kind: "end"}, nil
	case strings.HasPrefix(s, "@"):
		ms, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil || ms < 0 {
			return fromSpec{}, fmt.Errorf("invalid --from %q: want @ and a millisecond timestamp", s)
		}
		return fromSpec{kind: "time", n: ms}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return fromSpec{}, fmt.Errorf("invalid --from %q: want beginning, end, an offset or @TIMESTAMP_MS", s)
	}
	return fromSpec{kind: "offset", n: n}, nil
}

// consumePlan is where each partition starts, and the end offsets seen at
// start-up, which --exit-at-end stops at.
type consumePlan struct {
	start map[int32]int64
	end   map[int32]int64
}

// resolve turns --from into a concrete offset per partition, so that the
// consumer never has to guess (and --exit-at-end knows what is left).
func (o *consumeOpts) resolve(from fromSpec) (consumePlan, error) {
	cl, err := o.cf.connect()
	if err != nil {
		return consumePlan{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := o.cf.ctx()
	defer cancel()
	starts, err := adm.ListStartOffsets(ctx, o.topic)
	if err == nil {
		err = topicOffsetsErr(o.topic, starts)
	}
	if err != nil {
		return consumePlan{}, err
	}
	ends, err := adm.ListEndOffsets(ctx, o.topic)
	if err == nil {
		err = topicOffsetsErr(o.topic, ends)
	}
	if err != nil {
		return consumePlan{}, err
	}
	var byTime kadm.ListedOffsets
	if from.kind == "time" {
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, from.n, o.topic); err == nil {
			err = topicOffsetsErr(o.topic, byTime)
		}
		if err != nil {
			return consumePlan{}, err
		}
	}
	plan := consumePlan{start: map[int32]int64{}, end: map[int32]int64{}}
	for p, end := range ends[o.topic] {
		if o.partition >= 0 && p != int32(o.partition) {
			continue
		}
		lo := starts[o.topic][p].Offset
		plan.end[p] = end.Offset
		plan.start[p] = startOffset(from, lo, end.Offset, byTime[o.topic][p].Offset)
	}
	if o.partition >= 0 && len(plan.end) == 0 {
		return consumePlan{}, fmt.Errorf("topic %q has %d partitions: --partition %d does not exist",
			o.topic, len(ends[o.topic]), o.partition)
	}
	return plan, nil
}

// startOffset picks the first offset to read. A requested offset outside
// [log start, log end] is clamped rather than left to the client's reset
// policy, which would silently jump to the other end of the log.
func startOffset(from fromSpec, lo, hi, atTime int64) int64 {
	switch from.kind {
	case "beginning":
		return lo
	case "end":
		return hi
	case "time":
		if atTime < 0 {
			return hi
		}
		return atTime
	}
	return max(lo, min(from.n, hi))
}

// topicOffsetsErr reports a missing topic or a partition whose offsets could
// not be listed.
func topicOffsetsErr(topic string, l kadm.ListedOffsets) error {
	if len(l[topic]) == 0 {
		return fmt.Errorf("topic %q does not exist", topic)
	}
	for _, o := range l[topic] {
		if o.Err != nil {
			return topicError(topic, o.Err, "")
		}
	}
	return nil
}

// consume polls records and prints them until a stop condition holds.
func (o *consumeOpts) consume(ctx context.Context, plan consumePlan, tmpl []fmtToken, stdout, stderr io.Writer) int {
	offsets := map[int32]kgo.Offset{}
	remaining := map[int32]int64{} // partition → end offset still to reach
	for p, s := range plan.start {
		offsets[p] = kgo.NewOffset().At(s)
		if s < plan.end[p] {
			remaining[p] = plan.end[p]
		}
	}
	base, err := o.cf.clientOpts()
	if err != nil {
		return fail(stderr, err)
	}
	cl, err := kgo.NewClient(append(base,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: offsets}),
		// Control records (transaction markers) are never printed, but
		// their offsets tell --exit-at-end that a partition's end is reached.
		kgo.KeepControlRecords(),
	)...)
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	out := bufio.NewWriter(stdout)
	printed := 0
	done := func() bool {
		return (o.num > 0 && printed >= o.num) || (o.exitAtEnd && len(remaining) == 0)
	}
	for !done() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		if err := fetchError(fetches); err != nil {
			out.Flush()
			return fail(stderr, fmt.Errorf("consume %q: %w", o.topic, err))
		}
		for it := fetches.RecordIter(); !it.Done() && !done(); {
			r := it.Next()
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
			if r.Attrs.IsControl() {
				continue
			}
			writeRecord(out, tmpl, r)
			printed++
		}
		out.Flush()
	}
	out.Flush()
	fmt.Fprintf(stderr, "consumed %d records\n", printed)
	return exitOK
}

// fetchError returns the first error of a poll, ignoring the context
// cancellation that an interrupt causes.
func fetchError(fs kgo.Fetches) error {
	for _, e := range fs.Errors() {
		if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, kgo.ErrClientClosed) {
			continue
		}
		if e.Partition >= 0 && e.Topic != "" {
			return fmt.Errorf("partition %d: %w", e.Partition, e.Err)
		}
		return e.Err
	}
	return nil
}

// fmtToken is one piece of a compiled --format: literal text, or a verb.
type fmtToken struct {
	lit  string
	verb byte // 0 for literal text
}

// compileFormat parses a kcat-style template once, so that a bad verb is a
// usage error before anything is consumed.
func compileFormat(s string) ([]fmtToken, error) {
	var toks []fmtToken
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			toks = append(toks, fmtToken{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c != '%' && c != '\\') || i+1 == len(s) {
			lit.WriteByte(c)
			continue
		}
		i++
		n := s[i]
		switch {
		case c == '\\':
			esc, ok := map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', '\\': '\\'}[n]
			if !ok {
				return nil, fmt.Errorf("invalid --format: unknown escape \\%c", n)
			}
			lit.WriteByte(esc)
		case n == '%':
			lit.WriteByte('%')
		case strings.IndexByte("tpokvhT", n) >= 0:
			flush()
			toks = append(toks, fmtToken{verb: n})
		default:
			return nil, fmt.Errorf("invalid --format: unknown verb %%%c", n)
		}
	}
	flush()
	return toks, nil
}

func writeRecord(w *bufio.Writer, toks []fmtToken, r *kgo.Record) {
	for _, t := range toks {
		switch t.verb {
		case 0:
			w.WriteString(t.lit)
		case 't':
			w.WriteString(r.Topic)
		case 'p':
			w.WriteString(strconv.FormatInt(int64(r.Partition), 10))
		case 'o':
			w.WriteString(strconv.FormatInt(r.Offset, 10))
		case 'k':
			w.Write(r.Key)
		case 'v':
			w.Write(r.Value)
		case 'T':
			w.WriteString(strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					w.WriteByte(',')
				}
				w.WriteString(h.Key + "=" + string(h.Value))
			}
		}
	}
}
