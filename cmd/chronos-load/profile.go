package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// profileSegment is the length of one CPU profile a node is asked for: a
// run is profiled as consecutive segments, node<i>-cpu-<k>.pprof, which
// go tool pprof merges when given them all. Whole seconds (a test sets
// it shorter).
var profileSegment = 10 * time.Second

// profiles fetches the started nodes' profiles (-profile) from their
// pprof addresses, all of them loopback ones the tool chose.
type profiles struct {
	dir   string
	addrs []string
	log   io.Writer
	done  atomic.Bool
	wg    sync.WaitGroup
}

// startProfiles starts profiling every node at addrs, CPU segment after
// segment, until finish.
func startProfiles(dir string, addrs []string, log io.Writer) *profiles {
	p := &profiles{dir: dir, addrs: addrs, log: log}
	p.start()
	return p
}

// start starts the CPU segments of every node at p's addrs, until finish.
func (p *profiles) start() {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		fmt.Fprintln(p.log, "profiles:", err)
		p.done.Store(true)
		return
	}
	for i, a := range p.addrs {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for k := 0; !p.done.Load(); k++ {
				url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", a, int(profileSegment/time.Second))
				if err := p.fetch(url, fmt.Sprintf("node%d-cpu-%02d.pprof", i, k)); err != nil {
					fmt.Fprintln(p.log, "profiles:", err)
					return
				}
			}
		}()
	}
}

// finish waits for the CPU segments under way, then fetches each node's
// allocation profile (every allocation since it started).
func (p *profiles) finish() {
	p.done.Store(true)
	p.wg.Wait()
	for i, a := range p.addrs {
		if err := p.fetch("http://"+a+"/debug/pprof/allocs", fmt.Sprintf("node%d-allocs.pprof", i)); err != nil {
			fmt.Fprintln(p.log, "profiles:", err)
		}
	}
	fmt.Fprintf(p.log, "profiles in %s: go tool pprof -top %s\n", p.dir, filepath.Join(p.dir, "node0-cpu-*.pprof"))
}

// fetch writes what url answers to the file name in p's folder.
func (p *profiles) fetch(url, name string) error {
	client := http.Client{Timeout: profileSegment + 30*time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(filepath.Join(p.dir, name))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
