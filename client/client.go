package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// Defaults of Config.
const (
	// DefaultAttemptsPerNode makes the default number of attempts two
	// rounds of the node list: a node that failed once is tried again
	// after the others, as a node restarts or sheds load within seconds.
	DefaultAttemptsPerNode = 2
	// MinAttempts is the default's floor, so that a one-node client still
	// retries a 503.
	MinAttempts = 3
	// DefaultAttemptTimeout bounds one attempt. It is above the node's
	// own 10 s ceiling on a reply, so that a slow node answers its 503
	// before the client gives up on it.
	DefaultAttemptTimeout = 15 * time.Second
	// DefaultBackoffMin and DefaultBackoffMax bound the wait before a
	// retry: it doubles from the first to the second, with jitter.
	DefaultBackoffMin = 100 * time.Millisecond
	DefaultBackoffMax = 2 * time.Second
	// DefaultMaxRetryAfter caps a node's Retry-After, so that no answer
	// can stall a call for long.
	DefaultMaxRetryAfter = 10 * time.Second
	// MaxAnswerBytes bounds the body of an answer the client reads.
	MaxAnswerBytes = 4 << 20
)

// Config tunes a Client; New starts from DefaultConfig and applies its
// options.
type Config struct {
	// HTTPClient sends the requests; nil gives a client of its own over
	// http.DefaultTransport. Its Timeout, if any, applies on top of
	// AttemptTimeout.
	HTTPClient *http.Client
	// Logger receives a line for each retry; nil discards them.
	Logger *slog.Logger
	// Attempts bounds the attempts of one call, across the nodes; 0 means
	// DefaultAttemptsPerNode per node, at least MinAttempts.
	Attempts int
	// AttemptTimeout bounds one attempt.
	AttemptTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait before a retry.
	BackoffMin, BackoffMax time.Duration
	// MaxRetryAfter caps how long a node's Retry-After makes the client
	// wait.
	MaxRetryAfter time.Duration
	// TLS, when set, is the TLS configuration of a client of its own
	// (HTTPClient nil), and node addresses without a scheme are https.
	// LoadTLS builds one from PEM files.
	TLS *tls.Config
}

// DefaultConfig returns the defaults above.
func DefaultConfig() Config {
	return Config{
		AttemptTimeout: DefaultAttemptTimeout,
		BackoffMin:     DefaultBackoffMin,
		BackoffMax:     DefaultBackoffMax,
		MaxRetryAfter:  DefaultMaxRetryAfter,
	}
}

// Validate names the first field out of range.
func (c Config) Validate() error {
	switch {
	case c.Attempts < 0:
		return fmt.Errorf("%w: Attempts %d is negative", ErrInvalid, c.Attempts)
	case c.AttemptTimeout <= 0:
		return fmt.Errorf("%w: AttemptTimeout %v is not positive", ErrInvalid, c.AttemptTimeout)
	case c.BackoffMin < 0 || c.BackoffMax < c.BackoffMin:
		return fmt.Errorf("%w: backoff %v..%v is not 0 <= BackoffMin <= BackoffMax", ErrInvalid, c.BackoffMin, c.BackoffMax)
	case c.MaxRetryAfter < 0:
		return fmt.Errorf("%w: MaxRetryAfter %v is negative", ErrInvalid, c.MaxRetryAfter)
	}
	return nil
}

// Option changes the Config New starts from.
type Option func(*Config)

// WithHTTPClient sends the requests with hc.
func WithHTTPClient(hc *http.Client) Option { return func(c *Config) { c.HTTPClient = hc } }

// WithTLS reaches the nodes over HTTPS with cfg (see Config.TLS).
func WithTLS(cfg *tls.Config) Option { return func(c *Config) { c.TLS = cfg } }

// LoadTLS builds the TLS configuration of a client of nodes whose
// certificates caFile (PEM) signed; empty caFile trusts the system's
// roots. certFile and keyFile, when given, are the client's own
// certificate and key, for nodes that ask for one.
func LoadTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: CA file: %w", ErrInvalid, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrInvalid, caFile)
		}
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: certificate and key: %w", ErrInvalid, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// WithLogger logs each retry to log.
func WithLogger(log *slog.Logger) Option { return func(c *Config) { c.Logger = log } }

// WithAttempts bounds the attempts of one call.
func WithAttempts(n int) Option { return func(c *Config) { c.Attempts = n } }

// WithAttemptTimeout bounds one attempt.
func WithAttemptTimeout(d time.Duration) Option { return func(c *Config) { c.AttemptTimeout = d } }

// WithBackoff bounds the wait before a retry.
func WithBackoff(lo, hi time.Duration) Option {
	return func(c *Config) { c.BackoffMin, c.BackoffMax = lo, hi }
}

// Client writes timers to a Chronos cluster through any of its nodes, and
// fails over between them. It is safe for concurrent use.
type Client struct {
	cfg   Config
	hc    *http.Client
	log   *slog.Logger
	nodes []endpoint
	// first is the node a call tries first: the last one that answered,
	// so that a dead node costs one failed attempt, not one per call.
	first atomic.Int64
}

// endpoint is one node: its address as a log shows it, and its base URL.
type endpoint struct {
	addr string
	base string
}

// New returns a client of the nodes, each "host:port", "host" (port
// 7253) or an http or https URL with no path.
func New(nodes []string, opts ...Option) (*Client, error) {
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: no node addresses", ErrInvalid)
	}
	c := &Client{cfg: cfg, hc: cfg.HTTPClient, log: cfg.Logger}
	seen := map[string]bool{}
	for _, n := range nodes {
		ep, err := parseEndpoint(n, c.scheme())
		if err != nil {
			return nil, err
		}
		if seen[ep.base] {
			return nil, fmt.Errorf("%w: node %q is listed twice", ErrInvalid, n)
		}
		seen[ep.base] = true
		c.nodes = append(c.nodes, ep)
	}
	if c.hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg.TLS
		c.hc = &http.Client{Transport: t}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.cfg.Attempts == 0 {
		c.cfg.Attempts = max(DefaultAttemptsPerNode*len(c.nodes), MinAttempts)
	}
	return c, nil
}

// scheme is the scheme of node addresses written without one.
func (c *Client) scheme() string {
	if c.cfg.TLS != nil {
		return "https"
	}
	return "http"
}

// parseEndpoint reads a node address; one without a scheme gets scheme.
func parseEndpoint(s, scheme string) (endpoint, error) {
	raw := s
	if !strings.Contains(s, "://") {
		raw = scheme + "://" + s
	}
	u, err := url.Parse(raw)
	bad := func(why string) (endpoint, error) {
		return endpoint{}, fmt.Errorf("%w: node address %q: %s", ErrInvalid, s, why)
	}
	switch {
	case err != nil:
		return bad(err.Error())
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("the scheme is not http or https")
	case u.Host == "" || u.Hostname() == "":
		return bad("no host")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return bad("a node address has no user, path, query or fragment")
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), strconv.Itoa(wire.DefaultPort))
	} else if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return bad("the port is not 1 to 65535")
	}
	return endpoint{addr: host, base: u.Scheme + "://" + host}, nil
}

// Nodes returns the node addresses, as host:port.
func (c *Client) Nodes() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr
	}
	return out
}

// Create creates a timer and returns its ID. The client chooses the ID
// and writes it with PUT, so a retry after a lost answer writes the same
// timer again instead of creating a second one. On an error the ID
// returned is the chosen one (its bloom filter empty): the timer may
// exist all the same, and Update with that ID and the same definition
// completes the create and returns the ID with its filter. A create the
// node refused (400) returns no ID.
//
// A timer without a replication factor is written with the default's
// (wire.DefaultReplicationFactor), as a POST would create it. The ID is
// new, so no node holds a copy whose factor the write must keep; a PUT
// without a factor would make the node ask the ID's possible replicas
// first, one round trip more, and refuse the create (503) while one of
// them is down.
func (c *Client) Create(ctx context.Context, t Timer) (ID, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	if t.ReplicationFactor == 0 {
		t.ReplicationFactor = wire.DefaultReplicationFactor
	}
	id, err := newID()
	if err != nil {
		return "", err
	}
	got, err := c.put(ctx, id, t)
	var st *StatusError
	if errors.As(err, &st) && st.Status != http.StatusServiceUnavailable {
		return "", err // refused: surely not created
	}
	if err != nil {
		return id, err
	}
	return got, nil
}

// Update replaces the definition of timer id, or creates it under id if
// no timer has it, and returns the timer's ID as the node now gives it
// (its bloom filter may have changed). The pops of the new definition
// count their sequence numbers from 1 again.
func (c *Client) Update(ctx context.Context, id ID, t Timer) (ID, error) {
	id, err := ParseID(string(id))
	if err != nil {
		return "", err
	}
	if err := t.Validate(); err != nil {
		return "", err
	}
	return c.put(ctx, id, t)
}

func (c *Client) put(ctx context.Context, id ID, t Timer) (ID, error) {
	path := "/timers/" + string(id)
	body, err := t.MarshalJSON() // validates: a definition is sent as the API has it
	if err != nil {
		return "", err
	}
	a, err := c.call(ctx, nil, http.MethodPut, path, body)
	if err != nil {
		return "", err
	}
	loc, ok := strings.CutPrefix(a.header.Get("Location"), "/timers/")
	got, err := ParseID(loc)
	if !ok || err != nil || got.Unique() != id.Unique() {
		return "", fmt.Errorf("client: PUT %s on %s: 200 with Location %q, not /timers/<this timer's ID>", path, a.node, a.header.Get("Location"))
	}
	return got, nil
}

// Delete deletes timer id. Deleting a timer that does not exist, or was
// deleted already, succeeds.
func (c *Client) Delete(ctx context.Context, id ID) error {
	id, err := ParseID(string(id))
	if err != nil {
		return err
	}
	_, err = c.call(ctx, nil, http.MethodDelete, "/timers/"+string(id), nil)
	return err
}

// Get asks the cluster what its nodes hold of timer id. It returns an
// error matching ErrNotFound when the newest record any node holds is a
// tombstone (deleted, or its last pop made) or none holds one, and one
// matching ErrUnavailable when no node that may hold it answered the node
// asked, on every node tried.
func (c *Client) Get(ctx context.Context, id ID) (*TimerInfo, error) {
	id, err := ParseID(string(id))
	if err != nil {
		return nil, err
	}
	path := "/timers/" + string(id)
	a, err := c.call(ctx, nil, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	info, err := decodeInfo(a.body)
	if err != nil {
		return nil, fmt.Errorf("client: GET %s on %s: %w", path, a.node, err)
	}
	return info, nil
}

// Status returns the JSON answer of GET /status (docs/operations.md) of
// the node at addr, or, when addr is empty, of the first of the client's
// nodes that answers.
func (c *Client) Status(ctx context.Context, addr string) (json.RawMessage, error) {
	var nodes []endpoint
	if addr != "" {
		ep, err := parseEndpoint(addr, c.scheme())
		if err != nil {
			return nil, err
		}
		nodes = []endpoint{ep}
	}
	a, err := c.call(ctx, nodes, http.MethodGet, "/status", nil)
	if err != nil {
		return nil, err
	}
	if !json.Valid(a.body) {
		return nil, fmt.Errorf("client: GET /status on %s: the answer is not JSON", a.node)
	}
	return json.RawMessage(a.body), nil
}
