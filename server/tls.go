package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
	"github.com/chronos-timer/chronos/server/transport"
)

// TLS is optional and has two levels (docs/operations.md, "Security"):
//
//   - With a certificate and key ([http] tls_cert_file, tls_key_file) the
//     node serves only HTTPS, to clients and peers alike, and reaches its
//     peers over HTTPS too, presenting the same certificate as a client.
//   - With the cluster's CA as well ([cluster] tls_ca_file) the TLS between
//     nodes is mutual: a peer's certificate must be one the CA signed for
//     the address the node dials, and an internal request is taken only
//     over a connection whose client certificate the CA signed (403
//     otherwise, counted as reason="certificate"). Clients need no
//     certificate for the client API.
//
// The files are read at start and again on SIGHUP; a reload that fails
// keeps the material in use. Connections already open keep theirs.

// MaxTLSFileBytes bounds a certificate, key or CA file.
const MaxTLSFileBytes = 1 << 20

// tlsMaterial is what the files hold, parsed.
type tlsMaterial struct {
	cert *tls.Certificate
	// cas verifies the members' certificates; nil without a CA file.
	cas *x509.CertPool
}

// parseTLSMaterial parses a certificate chain and its key (PEM), and the
// cluster's CA certificates (PEM, may be empty). Its errors name the part
// at fault, never a key.
func parseTLSMaterial(certPEM, keyPEM, caPEM []byte) (tlsMaterial, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tlsMaterial{}, fmt.Errorf("certificate and key: %w", err)
	}
	if cert.Leaf == nil {
		return tlsMaterial{}, errors.New("certificate and key: no certificate")
	}
	m := tlsMaterial{cert: &cert}
	if len(caPEM) > 0 {
		m.cas = x509.NewCertPool()
		if !m.cas.AppendCertsFromPEM(caPEM) {
			return tlsMaterial{}, errors.New("CA file: no PEM certificate in it")
		}
	}
	return m, nil
}

// certs holds the TLS material in use, replaced on reload.
type certs struct {
	certFile, keyFile, caFile string
	cur                       atomic.Pointer[tlsMaterial]
	// refused counts internal requests refused for want of a client
	// certificate the CA signed.
	refused atomic.Uint64
}

// newCerts reads the files of cfg, or returns nil when cfg has no TLS.
func newCerts(cfg config.Node) (*certs, error) {
	if cfg.TLSCertFile == "" && cfg.TLSKeyFile == "" && cfg.TLSCAFile == "" {
		return nil, nil
	}
	c := &certs{certFile: cfg.TLSCertFile, keyFile: cfg.TLSKeyFile, caFile: cfg.TLSCAFile}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload reads the files again; on error the material in use stays.
func (c *certs) reload() error {
	var data [3][]byte
	for i, f := range []struct{ what, path string }{{"tls_cert_file", c.certFile}, {"tls_key_file", c.keyFile}, {"tls_ca_file", c.caFile}} {
		if f.path == "" {
			continue
		}
		b, err := readBounded(f.path)
		if err != nil {
			return fmt.Errorf("server: %s: %w", f.what, err)
		}
		data[i] = b
	}
	m, err := parseTLSMaterial(data[0], data[1], data[2])
	if err != nil {
		return fmt.Errorf("server: TLS: %w", err)
	}
	c.cur.Store(&m)
	return nil
}

// readBounded reads a file of at most MaxTLSFileBytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTLSFileBytes+1))
	if err == nil && len(b) > MaxTLSFileBytes {
		err = fmt.Errorf("%s is larger than %d bytes", path, MaxTLSFileBytes)
	}
	return b, err
}

// mutual reports whether TLS between nodes is mutual (a CA is set).
func (c *certs) mutual() bool { return c != nil && c.caFile != "" }

// serverConfig is the listener's TLS configuration: the node's current
// certificate, and with a CA, a request for the client's certificate,
// verified when given.
func (c *certs) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := c.cur.Load()
			cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*m.cert}}
			if m.cas != nil {
				cfg.ClientAuth, cfg.ClientCAs = tls.VerifyClientCertIfGiven, m.cas
			}
			return cfg, nil
		},
	}
}

// peerConfig is the TLS configuration of the connections to peers: the
// node's current certificate as a client's, and the peer's verified
// against the cluster's CA (the system's roots without one) for the
// address dialled. Verification reads the CA in use at each handshake,
// so a reload needs no new transport.
func (c *certs) peerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return c.cur.Load().cert, nil
		},
		// Verified below, against the pool in use now.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("server: peer presented no certificate")
			}
			opts := x509.VerifyOptions{Roots: c.cur.Load().cas, DNSName: cs.ServerName, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		},
	}
}

// errNoPeerCert is the reason an internal request over a connection
// without a client certificate the cluster's CA signed is refused.
const errNoPeerCert = "internal API: this cluster uses mutual TLS, and the connection carried no client certificate its CA signed"

// refusePeer answers 403 when TLS between nodes is mutual and r, which
// claims to come from a peer (a batch, or a request stamped for a
// member), came over a connection without a verified client
// certificate. A request that does not claim it, and is internal, the
// node refuses for want of a stamp.
func (c *certs) refusePeer(w http.ResponseWriter, r *http.Request) bool {
	if !c.mutual() {
		return false
	}
	internal := r.URL.EscapedPath() == transport.BatchPath || r.Header.Get(node.HeaderTo) != "" || r.Header.Get(node.HeaderSignature) != ""
	if !internal || r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return false
	}
	c.refused.Add(1)
	transport.WriteError(w, http.StatusForbidden, errNoPeerCert)
	return true
}

// withPeerCerts wraps h so that c refuses internal requests without a
// client certificate (see refusePeer).
func withPeerCerts(c *certs, h http.Handler) http.Handler {
	if !c.mutual() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.refusePeer(w, r) {
			h.ServeHTTP(w, r)
		}
	})
}

// tlsListener wraps ln in TLS when c is set.
func tlsListener(c *certs, ln net.Listener) net.Listener {
	if c == nil {
		return ln
	}
	return tls.NewListener(ln, c.serverConfig())
}

// secure gives c cfg's callback policy, and its transport between nodes:
// from the node's own address, over TLS with tc's material when tc is set.
func secure(c *transport.Client, cfg config.Node, tc *certs) error {
	policy, err := nodeConfig(cfg, nil, nil, nil).CallbackPolicy()
	if err != nil {
		return fmt.Errorf("server: callback policy: %w", err)
	}
	c.SetCallbackPolicy(policy)
	var peerTLS *tls.Config
	if tc != nil {
		peerTLS = tc.peerConfig()
	}
	c.SetPeers(cfg.Localhost, peerTLS)
	return nil
}
