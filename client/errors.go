package client

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Sentinels for errors.Is. A node's refusal is a *StatusError, which
// matches the sentinel of its status; running out of attempts is an
// *AllFailedError, which matches ErrAllNodesFailed and wraps the last
// failure, so errors.Is(err, ErrUnavailable) also tells that the last
// node answered 503.
var (
	// ErrBadRequest is a 400: the node refused the request as malformed,
	// and says why in StatusError.Reason. It is never retried.
	ErrBadRequest = errors.New("client: bad request")
	// ErrNotFound is a 404: for Get, no replica holds the timer live.
	ErrNotFound = errors.New("client: not found")
	// ErrUnavailable is a 503: the node is at a limit, or the replicas
	// it needed did not all apply a write. A write answered 503 may
	// still take effect (docs/client.md).
	ErrUnavailable = errors.New("client: unavailable")
	// ErrAllNodesFailed is returned when every attempt failed in a way
	// worth retrying (no answer, a timeout, a 503) and none is left.
	ErrAllNodesFailed = errors.New("client: all nodes failed")
)

// StatusError is a node's answer other than success: its status and the
// reason it gave (the Reason header, else the body).
type StatusError struct {
	Method string
	Path   string
	Node   string
	Status int
	Reason string
	// RetryAfter is the node's Retry-After, 0 when it sent none.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("client: %s %s on %s: %d %s", e.Method, e.Path, e.Node, e.Status, http.StatusText(e.Status))
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Is matches the sentinel of the status: ErrBadRequest, ErrNotFound or
// ErrUnavailable.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrBadRequest:
		return e.Status == http.StatusBadRequest
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrUnavailable:
		return e.Status == http.StatusServiceUnavailable
	}
	return false
}

// AllFailedError is returned when every attempt failed in a way worth
// retrying. Last is the last failure: a *StatusError for a 503, else the
// transport's error.
type AllFailedError struct {
	Attempts int
	Last     error
}

func (e *AllFailedError) Error() string {
	return fmt.Sprintf("client: all nodes failed after %d attempts; last: %v", e.Attempts, e.Last)
}

// Unwrap returns the last failure.
func (e *AllFailedError) Unwrap() error { return e.Last }

// Is matches ErrAllNodesFailed.
func (e *AllFailedError) Is(target error) bool { return target == ErrAllNodesFailed }
