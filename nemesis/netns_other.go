//go:build !linux

package nemesis

import (
	"context"
	"errors"
	"io"
	"net"
	"os/exec"
)

// namespace stands in for the Linux network namespace elsewhere.
type namespace struct{}

// Supported reports that only Linux has network namespaces.
func Supported() error { return errors.New("nemesis: network namespaces and TAP devices need Linux") }

func newNamespace(string, string, string, string, map[string]string) (*namespace, error) {
	return nil, Supported()
}

func (*namespace) port() io.ReadWriter                                    { return nil }
func (*namespace) close() error                                           { return nil }
func (*namespace) dial(context.Context, string, string) (net.Conn, error) { return nil, Supported() }
func (*namespace) listen(string) (net.Listener, error)                    { return nil, Supported() }
func (*namespace) start(*exec.Cmd) error                                  { return Supported() }
func removeStale(string) ([]string, error)                                { return nil, nil }
