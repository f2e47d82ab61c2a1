package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"

	"github.com/chronos-timer/chronos/server/config"
)

// listen binds cfg's address and then writes the pid file, if any, so
// that a pid file names a process that serves. release removes the pid
// file.
func listen(cfg config.Node, log *slog.Logger) (ln net.Listener, release func(), err error) {
	ln, err = net.Listen("tcp", cfg.ListenAddress())
	if err != nil {
		return nil, nil, fmt.Errorf("server: listen: %w", err)
	}
	pid, err := createPIDFile(cfg.PIDFile)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ln, func() { pid.remove(log) }, nil
}

// watchDNS re-reads the DNS file on SIGUSR2, as the original does, until
// ctx is done or the returned stop is called.
func (s *Server) watchDNS(ctx context.Context) (stop func()) {
	if dnsSignal == nil {
		return func() {}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, dnsSignal)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-sigs:
				if err := s.ReloadDNS(); err != nil {
					s.log.Error("DNS config reload failed; keeping the current records", "err", err)
				}
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		cancel()
	}
}

// ReloadDNS re-reads the DNS config file and gives its records to the
// connections opened from now on. On any error the current records stay.
func (s *Server) ReloadDNS() error {
	cfg := s.config()
	if cfg.DNSConfigFile == "" {
		return nil
	}
	d, ws, err := config.ReadDNSFile(cfg.DNSConfigFile)
	if err != nil {
		return err
	}
	config.LogWarnings(s.log, ws)
	s.client.SetDNS(d)
	s.log.Info("DNS config reloaded", "file", cfg.DNSConfigFile, "names", d.Len())
	return nil
}
