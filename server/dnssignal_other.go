//go:build !unix

package server

import "os"

// dnsSignal is nil without Unix signals: the DNS file is read at start.
var dnsSignal os.Signal
