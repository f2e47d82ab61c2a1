package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/chronos-timer/chronos/node"
)

var _ node.Network = (*Client)(nil)

// Client limits. Replication fans out to every replica and callbacks go to
// few client hosts at high rates, so idle connections per host are many.
// Connections per host are bounded: a burst of pops due together used to
// open a connection for each (70% of a node's CPU went to dialing, and
// 30,000 pops into one endpoint took minutes); bounded, the requests wait
// for a connection and reuse it (30,000 in under a second on loopback).
// The wait counts in the request's timeout.
const (
	clientMaxIdleConns        = 4096
	clientMaxIdleConnsPerHost = 512
	clientMaxConnsPerHost     = 128
	clientIdleConnTimeout     = 90 * time.Second
	clientDialTimeout         = 2 * time.Second
)

// Client is the node's network in production: each Send is one HTTP round
// trip on its own goroutine, and its outcome is handed to the node through
// the Serial.
type Client struct {
	serial *Serial
	http   *http.Client
	log    *slog.Logger
	// base is cancelled by Close, so round trips still running at shutdown
	// end at once instead of at their timeout.
	base   context.Context
	cancel context.CancelFunc
}

// NewClient returns a Client whose completions go through s.
func NewClient(s *Serial, log *slog.Logger) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancel(context.Background())
	return &Client{
		serial: s,
		http: &http.Client{
			Transport: newTransport(),
			// A callback or peer that redirects is answering something
			// else; the node sees the 3xx and judges it.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log:    log,
		base:   base,
		cancel: cancel,
	}
}

func newTransport() *http.Transport {
	return &http.Transport{
		// Peers and callbacks are addressed directly; no environment proxy.
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: clientDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        clientMaxIdleConns,
		MaxIdleConnsPerHost: clientMaxIdleConnsPerHost,
		MaxConnsPerHost:     clientMaxConnsPerHost,
		IdleConnTimeout:     clientIdleConnTimeout,
		DisableCompression:  true,
	}
}

// Send performs req and calls done under the node lock with the outcome, no
// later than timeout after the call (plus the wait for the lock).
func (c *Client) Send(req node.Request, timeout time.Duration, done func(node.Response, error)) {
	go func() {
		resp, err := c.roundTrip(req, timeout)
		c.serial.Do(func() { done(resp, err) })
	}()
}

// Close aborts round trips still running and drops idle connections.
func (c *Client) Close() {
	c.cancel()
	c.http.CloseIdleConnections()
}

// roundTrip performs one request, outside the node lock.
func (c *Client) roundTrip(req node.Request, timeout time.Duration) (node.Response, error) {
	ctx, cancel := context.WithTimeout(c.base, timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return node.Response{}, fmt.Errorf("server: build %s %s: %w", req.Method, req.URL, err)
	}
	for k, v := range req.Header {
		hr.Header[k] = []string{v}
	}
	hresp, err := c.http.Do(hr)
	if err != nil {
		// The *url.Error already names the method and URL.
		return node.Response{}, fmt.Errorf("server: %w", err)
	}
	defer hresp.Body.Close()
	// One byte over the limit tells an oversized body from one exactly at it.
	body, err := io.ReadAll(io.LimitReader(hresp.Body, node.MaxBodyBytes+1))
	if err != nil {
		return node.Response{}, fmt.Errorf("server: %s %s: read response: %w", req.Method, req.URL, err)
	}
	if len(body) > node.MaxBodyBytes {
		return node.Response{}, fmt.Errorf("server: %s %s: response body larger than %d bytes", req.Method, req.URL, node.MaxBodyBytes)
	}
	if len(body) == 0 {
		body = nil
	}
	return node.Response{Status: hresp.StatusCode, Header: nodeHeader(hresp.Header), Body: body}, nil
}
