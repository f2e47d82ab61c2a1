package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/client"
)

func newLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// timerFlags are the flags of a timer definition, for create and update.
type timerFlags struct {
	interval, repeatFor seconds
	uri, opaque         string
	rf                  int
	tags                string
}

func (f *timerFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.interval, "interval", "time between pops, and until the first (required; 0 pops once, at once)")
	fs.Var(&f.repeatFor, "repeat-for", "how long the timer pops (default: one pop)")
	fs.StringVar(&f.uri, "uri", "", "callback URL each pop is POSTed to (required)")
	fs.StringVar(&f.opaque, "opaque", "", "body of each pop")
	fs.IntVar(&f.rf, "rf", 0, "replication factor, 1 to 16 (default: the node's, 2)")
	fs.StringVar(&f.tags, "tags", "", "statistics tags, type[:count],...")
}

// timer builds the definition; set reports which flags were given.
func (f *timerFlags) timer(set map[string]bool) (client.Timer, error) {
	if !set["interval"] {
		return client.Timer{}, fmt.Errorf("%w: -interval is required", errUsage)
	}
	t := client.Timer{Interval: time.Duration(f.interval), RepeatFor: time.Duration(f.repeatFor),
		URI: f.uri, Opaque: f.opaque, ReplicationFactor: f.rf}
	for _, tag := range splitList(f.tags) {
		typ, count, hasCount := strings.Cut(tag, ":")
		n := 1
		if hasCount {
			var err error
			if n, err = strconv.Atoi(count); err != nil || n < 1 {
				return client.Timer{}, fmt.Errorf("%w: -tags: count %q of tag %q is not a positive integer", errUsage, count, typ)
			}
		}
		t.Tags = append(t.Tags, client.Tag{Type: typ, Count: n})
	}
	return t, t.Validate()
}

// seconds is a duration flag that also takes a plain number of seconds,
// as the API counts them.
type seconds time.Duration

func (s *seconds) String() string { return time.Duration(*s).String() }

func (s *seconds) Set(v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		*s = seconds(time.Duration(n) * time.Second)
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is neither seconds nor a duration such as 10s", v)
	}
	*s = seconds(d)
	return nil
}

// parse parses a command's flags and returns its positional arguments,
// which must number want.
func parse(fs *flag.FlagSet, args []string, want int, what string) ([]string, error) {
	fs.SetOutput(io.Discard)
	// Flags may come after the ID too: chronosctl update <id> -interval 5.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errUsage, fs.Name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) != want {
		return nil, fmt.Errorf("%w: %s takes %s", errUsage, fs.Name(), what)
	}
	return pos, nil
}

func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

func create(ctx context.Context, c *client.Client, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	var tf timerFlags
	tf.register(fs)
	if _, err := parse(fs, args, 0, "no arguments, only flags"); err != nil {
		return err
	}
	t, err := tf.timer(setFlags(fs))
	if err != nil {
		return err
	}
	id, err := c.Create(ctx, t)
	if err != nil {
		if id != "" {
			return fmt.Errorf("%w (the timer may exist all the same, as %s)", err, id)
		}
		return err
	}
	fmt.Fprintln(stdout, id)
	return nil
}

func update(ctx context.Context, c *client.Client, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("update", flag.ContinueOnError)
	var tf timerFlags
	tf.register(fs)
	pos, err := parse(fs, args, 1, "the timer's ID")
	if err != nil {
		return err
	}
	t, err := tf.timer(setFlags(fs))
	if err != nil {
		return err
	}
	id, err := c.Update(ctx, client.ID(pos[0]), t)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, id)
	return nil
}

func remove(ctx context.Context, c *client.Client, args []string, _ io.Writer) error {
	pos, err := parse(flag.NewFlagSet("delete", flag.ContinueOnError), args, 1, "the timer's ID")
	if err != nil {
		return err
	}
	return c.Delete(ctx, client.ID(pos[0]))
}

func get(ctx context.Context, c *client.Client, args []string, stdout io.Writer) error {
	pos, err := parse(flag.NewFlagSet("get", flag.ContinueOnError), args, 1, "the timer's ID")
	if err != nil {
		return err
	}
	info, err := c.Get(ctx, client.ID(pos[0]))
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

func status(ctx context.Context, c *client.Client, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	pos, err := parse(fs, args, min(len(args), 1), "at most one node address")
	if err != nil {
		return err
	}
	var addr string
	if len(pos) == 1 {
		addr = pos[0]
	}
	raw, err := c.Status(ctx, addr)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}
