package observe

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPprofServesProfilesOnLoopback: with a pprof address the process
// serves Go's profiles there, the index and a heap profile among them,
// and stops serving when told.
func TestPprofServesProfilesOnLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	stop := ServePprof(context.Background(), ln, slog.New(slog.DiscardHandler))
	base := "http://" + ln.Addr().String()
	for path, want := range map[string]string{"/debug/pprof/": "heap", "/debug/pprof/heap?debug=1": "heap profile"} {
		resp, err := http.Get(base + path)
		require.NoError(t, err, path)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, path)
		require.True(t, strings.Contains(string(body), want), "%s: no %q in the answer", path, want)
	}
	stop()
	_, err = http.Get(base + "/debug/pprof/")
	require.Error(t, err, "profiles still served after stop")
}
