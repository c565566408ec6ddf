// Command scramrate measures how many SCRAM authentications per second a
// broker completes: --connections workers each, in a loop, open a TCP (or
// with --tls-ca, TLS) connection, send ApiVersions, SaslHandshake v1 and
// the two SaslAuthenticate v2 rounds of SCRAM (RFC 5802), check the
// server's signature, and close the connection. bench/kafka/security.sh
// runs it against Samsa and Apache Kafka alike.
//
// What it measures is the server: a SCRAM server keeps StoredKey and
// ServerKey, so it computes a few HMACs per login, while the client must
// derive the salted password, PBKDF2 with --iterations rounds (4096 by
// default in Kafka: several milliseconds of CPU). Real clients may keep
// the salted password for a (salt, iterations) pair, and so does this
// one (--no-cache turns that off), so the client's cost per login is a
// few HMACs too and the broker, not the load generator, is what limits
// the rate. Both CPU costs are reported so that this can be checked: the
// client's from getrusage, the broker's (--pid) from /proc/PID/stat.
//
// Each login is timed from the dial to the verified server-final-message
// (the close is not counted). Logins that finish during the first
// --warmup are not counted; then logins finishing within --duration are.
// It prints one tab-separated line (see tsvHeader) or, with -v, a
// readable summary, and exits 1 if any login failed.
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const tsvHeader = "auths errors seconds auths_per_s p50_ms p99_ms p99.9_ms client_cpu_us_per_auth server_cpu_us_per_auth tls"

type options struct {
	bootstrap string
	mechanism string
	user      string
	password  string
	conns     int
	duration  time.Duration
	warmup    time.Duration
	tlsCA     string
	noCache   bool
	pid       int
	verbose   bool
}

func main() {
	var o options
	flag.StringVar(&o.bootstrap, "bootstrap", "127.0.0.1:9092", "`host:port` of a SASL_PLAINTEXT (or with --tls-ca, SASL_SSL) listener")
	flag.StringVar(&o.mechanism, "mechanism", "SCRAM-SHA-512", "SCRAM-SHA-512 or SCRAM-SHA-256")
	flag.StringVar(&o.user, "user", "bench", "SCRAM user")
	flag.StringVar(&o.password, "password", "bench-secret", "SCRAM password")
	flag.IntVar(&o.conns, "connections", 8, "concurrent connections, each logging in again and again")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "measured time, after --warmup")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Second, "logins not counted at the start")
	flag.StringVar(&o.tlsCA, "tls-ca", "", "PEM `file` of the CA to trust: connect with TLS")
	flag.BoolVar(&o.noCache, "no-cache", false, "derive the salted password (PBKDF2) at every login instead of once")
	flag.IntVar(&o.pid, "pid", 0, "broker process `id`, to report its CPU time per login (Linux /proc)")
	flag.BoolVar(&o.verbose, "v", false, "print a readable summary instead of a TSV line")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "scramrate:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.conns < 1 || o.duration <= 0 || o.warmup < 0 {
		return errors.New("want --connections >= 1, --duration > 0 and --warmup >= 0")
	}
	sc, err := newScram(o.mechanism, o.user, o.password, !o.noCache)
	if err != nil {
		return err
	}
	dial, err := dialer(o.tlsCA)
	if err != nil {
		return err
	}
	start := time.Now()
	from, to := start.Add(o.warmup), start.Add(o.warmup+o.duration)
	results := make([]result, o.conns)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = worker(o.bootstrap, dial, sc, from, to) })
	}
	time.Sleep(time.Until(from))
	c0, s0 := clientCPU(), serverCPU(o.pid)
	time.Sleep(time.Until(to))
	c1, s1 := clientCPU(), serverCPU(o.pid)
	wg.Wait()

	var all result
	for _, r := range results {
		all.lat = append(all.lat, r.lat...)
		all.errs += r.errs
		if all.firstErr == nil {
			all.firstErr = r.firstErr
		}
		if r.tls != "" {
			all.tls = r.tls
		}
	}
	slices.Sort(all.lat)
	n := len(all.lat)
	perAuth := func(d time.Duration) string {
		if n == 0 || (d == 0 && o.pid == 0) {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(d.Microseconds())/float64(n))
	}
	secs := o.duration.Seconds()
	tlsDesc := "none"
	if all.tls != "" {
		tlsDesc = all.tls
	}
	if o.verbose {
		fmt.Printf("%s as %s with %s, %d connections, %v (after %v warm-up), TLS: %s\n",
			o.bootstrap, o.user, o.mechanism, o.conns, o.duration, o.warmup, tlsDesc)
		fmt.Printf("logins: %d (%.0f/s), failed: %d\n", n, float64(n)/secs, all.errs)
		fmt.Printf("latency ms: p50 %.3f  p99 %.3f  p99.9 %.3f\n", q(all.lat, 0.5), q(all.lat, 0.99), q(all.lat, 0.999))
		fmt.Printf("CPU µs per login: client %s, server %s\n", perAuth(c1-c0), perAuth(s1-s0))
	} else {
		fmt.Printf("%d\t%d\t%.2f\t%.0f\t%.3f\t%.3f\t%.3f\t%s\t%s\t%s\n", n, all.errs, secs, float64(n)/secs,
			q(all.lat, 0.5), q(all.lat, 0.99), q(all.lat, 0.999), perAuth(c1-c0), perAuth(s1-s0), tlsDesc)
	}
	if all.errs > 0 {
		return fmt.Errorf("%d logins failed; the first: %w", all.errs, all.firstErr)
	}
	if n == 0 {
		return errors.New("no login finished within --duration")
	}
	return nil
}

// q is the nearest-rank q-quantile of sorted d in milliseconds.
func q(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := max(0, min(int(q*float64(len(sorted))+0.5)-1, len(sorted)-1))
	return float64(sorted[i]) / float64(time.Millisecond)
}

type result struct {
	lat      []time.Duration // of the logins that finished in the window
	errs     int
	firstErr error
	tls      string // version, cipher suite and key exchange negotiated
}

// worker logs in again and again until to, on a new connection each time.
func worker(addr string, dial func(context.Context, string) (net.Conn, error), sc *scram, from, to time.Time) result {
	var r result
	for {
		t0 := time.Now()
		if !t0.Before(to) {
			return r
		}
		desc, err := login(addr, dial, sc)
		t1 := time.Now()
		if err != nil {
			r.errs++
			if r.firstErr == nil {
				r.firstErr = err
			}
			// A refused login is held by the broker
			// (connection.failed.authentication.delay.ms); do not spin on
			// a failing dial either.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		r.tls = desc
		if !t1.Before(from) && t1.Before(to) {
			r.lat = append(r.lat, t1.Sub(t0))
		}
	}
}

func dialer(caFile string) (func(context.Context, string) (net.Conn, error), error) {
	nd := &net.Dialer{Timeout: 10 * time.Second}
	if caFile == "" {
		return func(ctx context.Context, addr string) (net.Conn, error) { return nd.DialContext(ctx, "tcp", addr) }, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate", caFile)
	}
	// No session cache: every login is a full TLS handshake, as a new
	// client's first connection is.
	td := &tls.Dialer{NetDialer: nd, Config: &tls.Config{RootCAs: pool}}
	return func(ctx context.Context, addr string) (net.Conn, error) { return td.DialContext(ctx, "tcp", addr) }, nil
}

// login is one connection: ApiVersions, SaslHandshake, SCRAM in two
// SaslAuthenticate rounds. It returns what TLS negotiated ("" without).
func login(addr string, dial func(context.Context, string) (net.Conn, error), sc *scram) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dial(ctx, addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	kc := &kconn{c: c, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("scramrate"))}

	av := kmsg.NewPtrApiVersionsRequest()
	av.Version, av.ClientSoftwareName, av.ClientSoftwareVersion = 3, "scramrate", "1"
	avr, err := kc.roundTrip(av)
	if err != nil {
		return "", fmt.Errorf("ApiVersions: %w", err)
	}
	if err := kerr.ErrorForCode(avr.(*kmsg.ApiVersionsResponse).ErrorCode); err != nil {
		return "", fmt.Errorf("ApiVersions: %w", err)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, sc.mechanism
	hsr, err := kc.roundTrip(hs)
	if err != nil {
		return "", fmt.Errorf("SaslHandshake: %w", err)
	}
	if err := kerr.ErrorForCode(hsr.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return "", fmt.Errorf("SaslHandshake %s: %w", sc.mechanism, err)
	}
	if err := sc.exchange(kc.authenticate); err != nil {
		return "", err
	}
	if tc, ok := c.(*tls.Conn); ok {
		cs := tc.ConnectionState()
		return strings.ReplaceAll(tls.VersionName(cs.Version), " ", "") + "/" + tls.CipherSuiteName(cs.CipherSuite) + "/" + cs.CurveID.String(), nil
	}
	return "", nil
}

// kconn sends requests on one connection and reads their responses.
type kconn struct {
	c    net.Conn
	f    *kmsg.RequestFormatter
	corr int32
	buf  []byte
}

func (k *kconn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	k.corr++
	k.buf = k.f.AppendRequest(k.buf[:0], req, k.corr)
	if _, err := k.c.Write(k.buf); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(k.c, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return nil, fmt.Errorf("response of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(k.c, body); err != nil {
		return nil, err
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != k.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", corr, k.corr)
	}
	body = body[4:]
	// A flexible response header ends with tagged fields (none are
	// defined), except ApiVersions', which is always v0.
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(body) == 0 || body[0] != 0 {
			return nil, errors.New("unexpected tagged fields in the response header")
		}
		body = body[1:]
	}
	resp := req.ResponseKind()
	return resp, resp.ReadFrom(body)
}

// authenticate is one SaslAuthenticate v2 round.
func (k *kconn) authenticate(msg []byte) ([]byte, error) {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 2, msg
	r, err := k.roundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("SaslAuthenticate: %w", err)
	}
	resp := r.(*kmsg.SASLAuthenticateResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = ": " + *resp.ErrorMessage
		}
		return nil, fmt.Errorf("SaslAuthenticate: %w%s", err, msg)
	}
	return resp.SASLAuthBytes, nil
}

// scram is a SCRAM client (RFC 5802 section 3) for one user, with a cache
// of salted passwords.
type scram struct {
	mechanism string
	h         func() hash.Hash
	user      string // saslname-escaped
	password  string
	cache     bool

	mu     sync.Mutex
	salted map[string][]byte // by salt and iterations
}

func newScram(mechanism, user, password string, cache bool) (*scram, error) {
	s := &scram{mechanism: mechanism, password: password, cache: cache, salted: map[string][]byte{}}
	switch mechanism {
	case "SCRAM-SHA-512":
		s.h = sha512.New
	case "SCRAM-SHA-256":
		s.h = sha256.New
	default:
		return nil, fmt.Errorf("unknown mechanism %q: want SCRAM-SHA-512 or SCRAM-SHA-256", mechanism)
	}
	s.user = strings.NewReplacer("=", "=3D", ",", "=2C").Replace(user)
	return s, nil
}

func (s *scram) hmac(key []byte, msg string) []byte {
	m := hmac.New(s.h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// saltedPassword is Hi(password, salt, i), from the cache when allowed.
func (s *scram) saltedPassword(salt []byte, iters int) ([]byte, error) {
	key := string(salt) + "/" + strconv.Itoa(iters)
	if s.cache {
		s.mu.Lock()
		sp, ok := s.salted[key]
		s.mu.Unlock()
		if ok {
			return sp, nil
		}
	}
	sp, err := pbkdf2.Key(s.h, s.password, salt, iters, s.h().Size())
	if err != nil {
		return nil, err
	}
	if s.cache {
		s.mu.Lock()
		s.salted[key] = sp
		s.mu.Unlock()
	}
	return sp, nil
}

// exchange runs the SCRAM messages through round (one SaslAuthenticate
// each) and verifies the server's signature.
func (s *scram) exchange(round func([]byte) ([]byte, error)) error {
	var nb [24]byte
	rand.Read(nb[:])
	nonce := base64.RawStdEncoding.EncodeToString(nb[:])
	clientFirstBare := "n=" + s.user + ",r=" + nonce
	serverFirst, err := round([]byte("n,," + clientFirstBare))
	if err != nil {
		return err
	}
	var rnonce, salt64, iter string
	for f := range strings.SplitSeq(string(serverFirst), ",") {
		switch {
		case strings.HasPrefix(f, "r="):
			rnonce = f[2:]
		case strings.HasPrefix(f, "s="):
			salt64 = f[2:]
		case strings.HasPrefix(f, "i="):
			iter = f[2:]
		}
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	iters, ierr := strconv.Atoi(iter)
	if err != nil || ierr != nil || !strings.HasPrefix(rnonce, nonce) || len(rnonce) == len(nonce) {
		return fmt.Errorf("malformed server-first-message %q", serverFirst)
	}
	sp, err := s.saltedPassword(salt, iters)
	if err != nil {
		return err
	}
	finalNoProof := "c=biws,r=" + rnonce
	authMessage := clientFirstBare + "," + string(serverFirst) + "," + finalNoProof
	clientKey := s.hmac(sp, "Client Key")
	storedKey := s.h()
	storedKey.Write(clientKey)
	proof := s.hmac(storedKey.Sum(nil), authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	serverFinal, err := round([]byte(finalNoProof + ",p=" + base64.StdEncoding.EncodeToString(proof)))
	if err != nil {
		return err
	}
	want := "v=" + base64.StdEncoding.EncodeToString(s.hmac(s.hmac(sp, "Server Key"), authMessage))
	if !bytes.Equal(serverFinal, []byte(want)) {
		return fmt.Errorf("server signature %q does not verify", serverFinal)
	}
	return nil
}

// clientCPU is this process's user and system CPU time so far.
func clientCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the user and system CPU time of process pid so far, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 10 ms: USER_HZ is
// 100 on Linux), or -1 without a pid.
func serverCPU(pid int) time.Duration {
	if pid == 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis (field 3 is first).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return -1
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
