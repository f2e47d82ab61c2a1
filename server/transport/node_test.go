package transport_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server"
	"github.com/chronos-timer/chronos/server/config"
	"github.com/chronos-timer/chronos/server/transport"
)

// serve runs a real node, its cluster key key, on a loopback listener
// until the test ends, and returns its base URL.
func serve(t *testing.T, key string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Localhost, cfg.ClusterKey, cfg.StorageDir = ln.Addr().String(), key, ""
	srv, err := server.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// TestBatchKeepsTheClusterKey proves a real node checks the signature of
// each sub-request as it would a lone request's: in one batch, a signed
// internal request is taken, an unsigned one and one signed over another
// body are refused with 403, and a client request needs no signature (a
// HEAD's answer, as alone, without its body).
func TestBatchKeepsTheClusterKey(t *testing.T) {
	const key = "0123456789abcdef"
	base := serve(t, key)
	sent, to := strconv.FormatInt(time.Now().UnixMilli(), 10), strings.TrimPrefix(base, "http://")
	sign := func(method, target string, body []byte) node.Header {
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write([]byte(method + "\n" + target + "\n" + sent + "\n" + to + "\n"))
		mac.Write(body)
		return node.Header{node.HeaderSignature: hex.EncodeToString(mac.Sum(nil)), node.HeaderSent: sent, node.HeaderTo: to}
	}
	refs := []byte(`{"IDs": []}`)
	reqs := []node.Request{
		{Method: "DELETE", URL: "/timers/references", Header: sign("DELETE", "/timers/references", refs), Body: refs},
		{Method: "DELETE", URL: "/timers/references", Header: node.Header{node.HeaderSent: sent, node.HeaderTo: to}, Body: refs},
		{Method: "DELETE", URL: "/timers/references", Header: sign("DELETE", "/timers/references", nil), Body: refs},
		{Method: "GET", URL: "/ping", Header: node.Header{}},
		{Method: "HEAD", URL: "/ping", Header: node.Header{}},
	}
	resp, err := http.Post(base+transport.BatchPath, transport.BatchContentType, bytes.NewReader(transport.AppendBatchRequest(nil, reqs)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resps, err := transport.ParseBatchResponse(body, len(reqs))
	if resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("answer %d %q, %v; want 200 with %d responses", resp.StatusCode, body, err, len(reqs))
	}
	for i, want := range []int{202, 403, 403, 200, 200} {
		if resps[i].Status != want {
			t.Errorf("sub-request %d: %d %q, want %d", i, resps[i].Status, resps[i].Body, want)
		}
	}
	if string(resps[3].Body) != "OK" || resps[4].Body != nil {
		t.Errorf("GET and HEAD /ping bodies %q and %q, want \"OK\" and none, as alone", resps[3].Body, resps[4].Body)
	}
}
