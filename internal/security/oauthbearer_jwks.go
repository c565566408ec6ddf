package security

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// The JSON Web Key Set whose public keys verify signed OAUTHBEARER tokens
// (RFC 7517), kept as Kafka's RefreshingHttpsJwks and
// JwksFileVerificationKeyResolver keep it:
//
//   - file: URL: read once at start.
//   - http(s) URL: fetched at start, then every Refresh by a goroutine
//     Close stops, and when a token names a key id the set does not hold.
//     A failed fetch is retried after RetryBackoff, doubling, until
//     RetryBackoffMax has passed; after that the old keys stay in use.
//
// Kafka refreshes for an unknown key id in the background and fails the
// token that asked for it; Samsa fetches at once (one attempt) and checks
// that token against the new set, so the first client of a rotated key
// is not refused. Either way an unknown key id triggers at most one fetch
// a minute, for at most 16 key ids, and fetches never overlap.
//
// Keys a set holds that cannot verify signatures (symmetric keys, keys
// whose type go-jose does not read) are skipped and logged, as jose4j
// skips them; a private key is used for its public half.

// JWKSConfig says where a key set is and how it is kept fresh.
type JWKSConfig struct {
	// URL is the key set's address: an http, https or file URL.
	URL string
	// Refresh is the time between fetches of an http(s) set.
	Refresh time.Duration
	// RetryBackoff is the first wait after a failed fetch; it doubles
	// each attempt, and attempts stop RetryBackoffMax after the first.
	RetryBackoff, RetryBackoffMax time.Duration
	// Client fetches http(s) sets; nil means a client with the system's
	// trusted roots and a 10 second timeout.
	Client *http.Client
	// Logger defaults to discarding; Now to time.Now.
	Logger *slog.Logger
	Now    func() time.Time
}

// Limits of the fetches for unknown key ids (Kafka's RefreshingHttpsJwks).
const (
	missingKeyIDInterval = time.Minute
	missingKeyIDEntries  = 16
	maxKeyIDLength       = 1000
	// maxJWKSSize bounds a fetched key set; real ones are a few KB.
	maxJWKSSize = 1 << 20
)

// JWKS is a key set kept fresh. Keys may be called from any goroutine.
type JWKS struct {
	cfg  JWKSConfig
	keys atomic.Pointer[[]jose.JSONWebKey]

	// fetchMu serializes fetches: the periodic refresh and those for
	// unknown key ids.
	fetchMu sync.Mutex
	mu      struct {
		sync.Mutex
		// missing are the unknown key ids fetched for, with when one may
		// trigger a fetch again.
		missing map[string]time.Time
	}
	// stop ends the refresh loop and any fetch in flight; done is closed
	// when the loop has returned.
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}
}

// NewJWKS returns a key set that holds no keys until Start.
func NewJWKS(cfg JWKSConfig) *JWKS {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	j := &JWKS{cfg: cfg}
	j.keys.Store(&[]jose.JSONWebKey{})
	j.mu.missing = map[string]time.Time{}
	j.ctx, j.stop = context.WithCancel(context.Background())
	return j
}

// Location is the key set's URL.
func (j *JWKS) Location() string { return j.cfg.URL }

// Keys are the keys held now.
func (j *JWKS) Keys() []jose.JSONWebKey { return *j.keys.Load() }

func (j *JWKS) isFile() bool { return strings.HasPrefix(strings.ToLower(j.cfg.URL), "file:") }

// Start loads the key set, retrying a failed fetch as configured, and
// for an http(s) set starts refreshing it. It fails when the set cannot
// be had, and then nothing is left running.
func (j *JWKS) Start(ctx context.Context) error {
	var err error
	if j.isFile() {
		err = j.readFile()
	} else {
		err = j.fetchWithRetry(ctx)
	}
	if err != nil {
		return err
	}
	if !j.isFile() {
		j.done = make(chan struct{})
		go j.refreshLoop()
	}
	return nil
}

// Close stops the refresh loop and waits for it.
func (j *JWKS) Close() {
	j.stop()
	if j.done != nil {
		<-j.done
	}
}

func (j *JWKS) refreshLoop() {
	defer close(j.done)
	t := time.NewTicker(j.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-j.ctx.Done():
			return
		case <-t.C:
			if err := j.fetchWithRetry(j.ctx); err != nil && j.ctx.Err() == nil {
				j.cfg.Logger.Warn("OAuth JWKS refresh failed; keeping the keys fetched before", "url", j.cfg.URL, "err", err)
			}
		}
	}
}

func (j *JWKS) readFile() error {
	u, err := url.Parse(j.cfg.URL)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(u.Path)
	if err != nil {
		return fmt.Errorf("read the JWKS file: %w", err)
	}
	return j.install(b)
}

// fetchWithRetry fetches the set as Kafka's Retry does: attempt, wait
// RetryBackoff·2^(n-1), again, until RetryBackoffMax has passed.
func (j *JWKS) fetchWithRetry(ctx context.Context) error {
	end := j.cfg.Now().Add(j.cfg.RetryBackoffMax)
	var first error
	for attempt := 1; ; attempt++ {
		j.fetchMu.Lock()
		err := j.fetch(ctx)
		j.fetchMu.Unlock()
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
		wait := min(j.cfg.RetryBackoff<<(attempt-1), end.Sub(j.cfg.Now()))
		if wait <= 0 || j.cfg.RetryBackoff<<(attempt-1) <= 0 {
			return first
		}
		j.cfg.Logger.Info("OAuth JWKS fetch failed; retrying", "url", j.cfg.URL, "attempt", attempt, "wait", wait, "err", err)
		select {
		case <-ctx.Done():
			return errors.Join(first, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// fetch gets the set once and installs it. The caller holds fetchMu.
func (j *JWKS) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.cfg.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := j.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch the JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch the JWKS: %s answered %s", j.cfg.URL, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSSize+1))
	if err != nil {
		return fmt.Errorf("fetch the JWKS: %w", err)
	}
	if len(b) > maxJWKSSize {
		return fmt.Errorf("fetch the JWKS: %s sent more than %d bytes", j.cfg.URL, maxJWKSSize)
	}
	return j.install(b)
}

// install parses a key set and makes it the one in use.
func (j *JWKS) install(doc []byte) error {
	keys, skipped, err := ParseJWKS(doc)
	if err != nil {
		return fmt.Errorf("the JWKS at %s: %w", j.cfg.URL, err)
	}
	for _, e := range skipped {
		j.cfg.Logger.Warn("OAuth JWKS: key skipped", "url", j.cfg.URL, "err", e)
	}
	j.keys.Store(&keys)
	j.mu.Lock()
	for _, k := range keys {
		delete(j.mu.missing, k.KeyID)
	}
	j.mu.Unlock()
	j.cfg.Logger.Info("OAuth JWKS loaded", "url", j.cfg.URL, "keys", len(keys))
	return nil
}

// ParseJWKS reads the verification keys of a JSON Web Key Set document.
// A key that cannot verify signatures is skipped and reported in
// skipped; err is for a document that is not a key set at all.
func ParseJWKS(doc []byte) (keys []jose.JSONWebKey, skipped []error, err error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, nil, fmt.Errorf("not a JSON Web Key Set: %w", err)
	}
	if set.Keys == nil {
		return nil, nil, errors.New(`not a JSON Web Key Set: no "keys" member`)
	}
	for i, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			skipped = append(skipped, fmt.Errorf("key #%d: %w", i, err))
			continue
		}
		if _, symmetric := k.Key.([]byte); symmetric {
			skipped = append(skipped, fmt.Errorf("key #%d (kid %q): a symmetric key cannot be published in a JWKS", i, k.KeyID))
			continue
		}
		if !k.IsPublic() {
			k = k.Public()
		}
		if !k.Valid() {
			skipped = append(skipped, fmt.Errorf("key #%d (kid %q): not a valid key", i, k.KeyID))
			continue
		}
		keys = append(keys, k)
	}
	return keys, skipped, nil
}

// refreshForKeyID fetches the set once for a key id it does not hold, if
// that key id has not asked for one in the last minute, and reports
// whether the set holds it now. A caller that finds a fetch under way
// waits for it.
func (j *JWKS) refreshForKeyID(kid string) bool {
	if j.isFile() || kid == "" || len(kid) > maxKeyIDLength {
		return false
	}
	fetch := j.markMissing(kid)
	j.fetchMu.Lock()
	defer j.fetchMu.Unlock()
	if hasKeyID(j.Keys(), kid) {
		return true // fetched by the caller we waited for
	}
	if !fetch {
		return false
	}
	if err := j.fetch(j.ctx); err != nil {
		j.cfg.Logger.Warn("OAuth JWKS fetch for an unknown key id failed", "url", j.cfg.URL, "kid", kid, "err", err)
		return false
	}
	return hasKeyID(j.Keys(), kid)
}

// markMissing records a fetch for kid and reports whether one is due:
// none was made for it in the last minute. At most missingKeyIDEntries
// are remembered; the oldest is forgotten first.
func (j *JWKS) markMissing(kid string) bool {
	now := j.cfg.Now()
	j.mu.Lock()
	defer j.mu.Unlock()
	if next, ok := j.mu.missing[kid]; ok && now.Before(next) {
		return false
	}
	j.mu.missing[kid] = now.Add(missingKeyIDInterval)
	for len(j.mu.missing) > missingKeyIDEntries {
		oldest := ""
		for k, t := range j.mu.missing {
			if oldest == "" || t.Before(j.mu.missing[oldest]) {
				oldest = k
			}
		}
		delete(j.mu.missing, oldest)
	}
	return true
}

func hasKeyID(keys []jose.JSONWebKey, kid string) bool {
	for _, k := range keys {
		if k.KeyID == kid {
			return true
		}
	}
	return false
}
