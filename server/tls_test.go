package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/internal/certtest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// tlsNode starts a node on ln with the cluster file conf, and returns it.
func tlsNode(t *testing.T, ln net.Listener, conf string) *Server {
	t.Helper()
	path := writeFile(t, t.TempDir(), "chronos_cluster.conf", conf)
	cfg, err := parseAndLoad(append(noFiles, "--cluster-config-file", path))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })
	return srv
}

// caClient is an HTTPS client that trusts ca and presents no certificate.
func caClient(t *testing.T, ca *certtest.CA) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestMutualTLSBetweenNodes proves the two levels of TLS on two nodes
// with certificates a test CA signed: a client without a certificate
// creates a timer over HTTPS and it reaches both replicas (the nodes
// talk HTTPS with each other's certificates); an internal request from
// that client, stamped as a peer's, is refused with 403 and counted as
// reason="certificate"; plain HTTP gets no answer as a node's.
func TestMutualTLSBetweenNodes(t *testing.T) {
	ca := certtest.NewCA(t, "cluster")
	lns := make([]net.Listener, 2)
	addrs := make([]string, 2)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	srvs := make([]*Server, 2)
	for i, ln := range lns {
		cert, key := ca.Issue(t, "node"+addrs[i][len(addrs[i])-5:], "127.0.0.1")
		srvs[i] = tlsNode(t, ln, "[http]\ntls_cert_file = "+cert+"\ntls_key_file = "+key+
			"\n[cluster]\nlocalhost = "+addrs[i]+"\nnode = "+addrs[0]+"\nnode = "+addrs[1]+
			"\nkey = 0123456789abcdef-tls\ntls_ca_file = "+ca.File+"\n")
	}
	hc := caClient(t, ca)
	body := `{"timing":{"interval":600},"callback":{"http":{"uri":"http://127.0.0.1:9/cb"}},"reliability":{"replication-factor":2}}`
	resp, err := hc.Post("https://"+addrs[0]+"/timers", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST over HTTPS without a client certificate: %d %q, want 200", resp.StatusCode, resp.Header.Get("Reason"))
	}
	wid := strings.TrimPrefix(resp.Header.Get("Location"), "/timers/")
	id, _, err := wire.ParseWireID(wid)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range srvs {
		var held bool
		s.serial.Do(func() { _, held = s.node.Timer(id) })
		if !held {
			t.Errorf("node %s does not hold the timer: the replication over mutual TLS failed", addrs[i])
		}
	}

	req, _ := http.NewRequest("PUT", "https://"+addrs[1]+"/timers/"+wid, strings.NewReader(body))
	req.Header.Set(node.HeaderTo, addrs[1])
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("Reason"), "mutual TLS") {
		t.Errorf("internal request without a client certificate: %d %q, want 403 naming mutual TLS", resp.StatusCode, resp.Header.Get("Reason"))
	}
	resp, err = hc.Get("https://" + addrs[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(metrics, []byte(`chronos_internal_refused_total{reason="certificate"} 1`)) {
		t.Errorf("metrics lack the refusal:\n%s", metrics)
	}
	if resp, err := http.Get("http://" + addrs[1] + "/ping"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP to a TLS node: 200, want no node's answer")
		}
	}
}

// TestTLSMaterialErrors proves a certificate without its key, a key of
// another certificate and a CA file without a certificate are refused,
// naming the part at fault.
func TestTLSMaterialErrors(t *testing.T) {
	ca := certtest.NewCA(t, "cluster")
	certA, keyA := ca.Issue(t, "a", "127.0.0.1")
	_, keyB := ca.Issue(t, "b", "127.0.0.1")
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := parseTLSMaterial(read(certA), read(keyA), read(ca.File)); err != nil {
		t.Fatalf("good material: %v", err)
	}
	for _, tc := range []struct {
		name           string
		cert, key, cas []byte
		want           string
	}{
		{"no key", read(certA), nil, nil, "certificate and key"},
		{"another key", read(certA), read(keyB), nil, "certificate and key"},
		{"CA not PEM", read(certA), read(keyA), []byte("not a certificate"), "CA file"},
	} {
		if _, err := parseTLSMaterial(tc.cert, tc.key, tc.cas); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}

// FuzzTLSMaterial proves the parser of the TLS files never panics and
// takes nothing it cannot serve with: what it accepts has a certificate
// whose key matches.
func FuzzTLSMaterial(f *testing.F) {
	ca := certtest.NewCA(f, "fuzz")
	cert, key := ca.Issue(f, "n", "127.0.0.1")
	read := func(path string) []byte { b, _ := os.ReadFile(path); return b }
	f.Add(read(cert), read(key), read(ca.File))
	f.Add(read(cert), read(key), []byte{})
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), read(key), read(ca.File))
	f.Fuzz(func(t *testing.T, certPEM, keyPEM, caPEM []byte) {
		m, err := parseTLSMaterial(certPEM, keyPEM, caPEM)
		if err != nil {
			return
		}
		if m.cert == nil || m.cert.Leaf == nil || m.cert.PrivateKey == nil {
			t.Fatalf("accepted material without a certificate and its key")
		}
		if len(caPEM) > 0 && m.cas == nil {
			t.Fatalf("accepted a CA file without a pool")
		}
	})
}
