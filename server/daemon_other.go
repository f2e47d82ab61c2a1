//go:build !unix

package server

import "errors"

// Daemonize is --daemon, which needs a Unix system: elsewhere, run the
// node in the foreground under a service manager.
func Daemonize(cfg Config, args []string) error {
	return errors.New("server: --daemon needs a Unix system; run in the foreground under a service manager")
}
