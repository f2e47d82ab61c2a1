package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofReadHeaderTimeout bounds the wait for a profile request's header,
// as the node's own server bounds it.
const pprofReadHeaderTimeout = 5 * time.Second

// pprofHandler serves Go's profiles under /debug/pprof/, as
// net/http/pprof registers them on the default mux, which this process
// does not serve.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// ListenPprof listens on addr, a loopback address (config.Node.PprofAddress,
// validated).
func ListenPprof(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server: pprof_address: %w", err)
	}
	return ln, nil
}

// ServePprof serves the profiles on ln; stop shuts it and waits for it.
// The profile endpoints hold a request for as long as it asks (a CPU
// profile's seconds), so their server has no write timeout.
func ServePprof(ctx context.Context, ln net.Listener, log *slog.Logger) (stop func()) {
	srv := &http.Server{Handler: pprofHandler(), ReadHeaderTimeout: pprofReadHeaderTimeout, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("profiles: serve", "err", err)
		}
	}()
	log.Info("serving profiles", "address", ln.Addr().String(), "path", "/debug/pprof/")
	return func() {
		shut, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if srv.Shutdown(shut) != nil {
			srv.Close()
		}
		<-done
	}
}
