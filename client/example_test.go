package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/client"
	"github.com/chronos-timer/chronos/server"
	"github.com/chronos-timer/chronos/server/config"
)

// Example creates a timer through a node, receives its pop with a
// Handler, and deletes it.
func Example() {
	addr, stop := startNode() // a Chronos node on loopback, as `chronos` runs one
	defer stop()
	ctx := context.Background()

	// The callback endpoint: the Handler hands each pop to the function
	// once, however many replicas make it.
	pops := make(chan client.Pop, 1)
	h, err := client.NewHandler(client.DefaultHandlerConfig(), func(ctx context.Context, p client.Pop) error {
		pops <- p
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	callbacks := httptest.NewServer(h)
	defer callbacks.Close()

	c, err := client.New([]string{addr}) // list every node of the cluster
	if err != nil {
		log.Fatal(err)
	}
	id, err := c.Create(ctx, client.Timer{
		Interval: 0, // pop once, at once
		URI:      callbacks.URL + "/pops",
		Opaque:   "hello",
	})
	if err != nil {
		log.Fatal(err)
	}
	p := <-pops
	fmt.Printf("pop %d of our timer (%v): %s\n", p.Seq, p.Of(id), p.Opaque)

	if err := c.Delete(ctx, id); err != nil {
		log.Fatal(err)
	}
	fmt.Println("deleted")
	// Output:
	// pop 1 of our timer (true): hello
	// deleted
}

// ExampleClient_Update replaces a timer's definition: the pops of the
// new one count from 1.
func ExampleClient_Update() {
	addr, stop := startNode()
	defer stop()
	ctx := context.Background()
	pops := make(chan client.Pop, 1)
	h, err := client.NewHandler(client.DefaultHandlerConfig(), func(ctx context.Context, p client.Pop) error {
		pops <- p
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	callbacks := httptest.NewServer(h)
	defer callbacks.Close()
	c, err := client.New([]string{addr})
	if err != nil {
		log.Fatal(err)
	}

	id, err := c.Create(ctx, client.Timer{Interval: time.Hour, URI: callbacks.URL + "/pops", Opaque: "in an hour"})
	if err != nil {
		log.Fatal(err)
	}
	// Keep the ID Update returns: it names the timer's replicas today.
	id, err = c.Update(ctx, id, client.Timer{Interval: 0, URI: callbacks.URL + "/pops", Opaque: "now instead"})
	if err != nil {
		log.Fatal(err)
	}
	p := <-pops
	fmt.Printf("pop %d: %s\n", p.Seq, p.Opaque)

	// A definition the node refuses is a 400 with its reason, never retried.
	_, err = c.Update(ctx, id, client.Timer{Interval: time.Second, URI: "ftp://127.0.0.1/x"})
	var refused *client.StatusError
	if errors.Is(err, client.ErrBadRequest) && errors.As(err, &refused) {
		fmt.Println("refused:", refused.Reason)
	}
	// Output:
	// pop 1: now instead
	// refused: callback.http.uri "ftp://127.0.0.1/x" is not an absolute http or https URL
}

// ExampleNewHandler shows a duplicate pop dropped: the second copy of
// pop 1, as the timer's next replica makes it when the first replica's
// notice was lost, is answered 200 but not handed on.
func ExampleNewHandler() {
	h, err := client.NewHandler(client.DefaultHandlerConfig(), func(ctx context.Context, p client.Pop) error {
		fmt.Printf("timer %s pop %d: %s\n", p.Timer, p.Seq, p.Opaque)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	callbacks := httptest.NewServer(h)
	defer callbacks.Close()

	for _, seq := range []int{1, 1, 2} {
		req, _ := http.NewRequest(http.MethodPost, callbacks.URL+"/pops", strings.NewReader("hello"))
		req.Header.Set("X-Chronos-Timer", "8f3a9c0d12e4b567")
		req.Header.Set("X-Sequence-Number", strconv.Itoa(seq))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println("answered", resp.StatusCode)
	}
	fmt.Printf("%+v\n", h.Stats())
	// Output:
	// timer 8f3a9c0d12e4b567 pop 1: hello
	// answered 200
	// answered 200
	// timer 8f3a9c0d12e4b567 pop 2: hello
	// answered 200
	// {Delivered:2 Failed:0 Duplicates:1 Refused:0}
}

// startNode serves a lone Chronos node, the production server on a
// loopback port, and returns its address and a function that stops it.
func startNode() (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	cfg := config.Default()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	cfg.BindAddress = host
	if cfg.BindPort, err = strconv.Atoi(port); err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(cfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return ln.Addr().String(), func() {
		cancel()
		if err := <-done; err != nil {
			log.Fatal(err)
		}
	}
}
