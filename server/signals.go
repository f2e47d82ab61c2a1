package server

import (
	"context"
	"os"
	"os/signal"

	"github.com/chronos-timer/chronos/server/config"
	"github.com/chronos-timer/chronos/server/lifecycle"
)

// handleSignals serves SIGHUP and SIGUSR1 until ctx is done.
func (s *Server) handleSignals(ctx context.Context, sigs <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-sigs:
			switch sig {
			case lifecycle.ResyncSignal:
				s.Resync()
			case lifecycle.ReloadSignal:
				if err := s.Reload(); err != nil {
					s.log.Error("cluster reload failed; keeping the current cluster", "err", err)
				}
			}
		}
	}
}

// watchDNS re-reads the DNS file on SIGUSR2, as the original does, until
// ctx is done or the returned stop is called.
func (s *Server) watchDNS(ctx context.Context) (stop func()) {
	if lifecycle.DNSSignal == nil {
		return func() {}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, lifecycle.DNSSignal)
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
