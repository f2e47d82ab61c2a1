//go:build unix

package server

import (
	"os"
	"syscall"
)

// dnsSignal re-reads the DNS config file, as SIGUSR2 does in the original
// (its init script's reload-dns).
var dnsSignal os.Signal = syscall.SIGUSR2
