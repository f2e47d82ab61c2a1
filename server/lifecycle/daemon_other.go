//go:build !unix

package lifecycle

import (
	"errors"

	"github.com/chronos-timer/chronos/server/config"
)

// Daemonize is --daemon, which needs a Unix system: elsewhere, run the
// node in the foreground under a service manager.
func Daemonize(cfg config.Node, args []string) error {
	return errors.New("server: --daemon needs a Unix system; run in the foreground under a service manager")
}
