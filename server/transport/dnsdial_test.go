package transport

import (
	"context"
	"errors"
	"net"
	"reflect"
	"testing"

	"github.com/chronos-timer/chronos/server/config"
)

// TestDNSDial proves that the client's connections honour the records: a
// listed name is dialled at its addresses in order until one answers, a
// CNAME is dialled by its target's name, and an unlisted name as given.
func TestDNSDial(t *testing.T) {
	d, _, err := config.ParseDNSConfig([]byte(`{"hostnames": [
		{"name": "cb.example", "records": [{"rrtype": "A", "targets": ["10.0.0.7", "10.0.0.8"]}]},
		{"name": "alias.example", "records": [{"rrtype": "CNAME", "target": "real.example"}]}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	var dialled []string
	dd := newDNSDialer().through(func(_ context.Context, _, addr string) (net.Conn, error) {
		dialled = append(dialled, addr)
		if addr == "10.0.0.8:80" {
			c, _ := net.Pipe()
			return c, nil
		}
		return nil, errors.New("refused")
	})
	dd.static.Store(d)
	tests := []struct {
		addr   string
		want   []string
		answer bool
	}{
		{"cb.example:80", []string{"10.0.0.7:80", "10.0.0.8:80"}, true},
		{"alias.example:80", []string{"real.example:80"}, false},
		{"other.example:80", []string{"other.example:80"}, false},
	}
	for _, tt := range tests {
		dialled = nil
		conn, err := dd.DialContext(context.Background(), "tcp", tt.addr)
		if conn != nil {
			conn.Close()
		}
		if (err == nil) != tt.answer || !reflect.DeepEqual(dialled, tt.want) {
			t.Errorf("dial %s: err %v, dialled %q; want answered %v, dialled %q", tt.addr, err, dialled, tt.answer, tt.want)
		}
	}
}

// TestDNSDialLoopback proves the records reach a real connection: a
// request to a name the file maps to 127.0.0.1 is served by the listener
// there, through the client's own dialer.
func TestDNSDialLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	d, _, err := config.ParseDNSConfig([]byte(`{"hostnames": [{"name": "callbacks.invalid", "records": [{"rrtype": "A", "targets": ["127.0.0.1"]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	dd := newDNSDialer()
	dd.static.Store(d)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	conn, err := dd.DialContext(context.Background(), "tcp", net.JoinHostPort("callbacks.invalid", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, 5)
	if _, err := conn.Read(buf); err != nil || string(buf) != "hello" {
		t.Errorf("read %q, %v; want hello from the listener", buf, err)
	}
}
