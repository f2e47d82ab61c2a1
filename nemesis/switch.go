package nemesis

import (
	"container/heap"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// MaxFrameBytes is the largest Ethernet frame a port reads: a 1500-byte
// MTU, its 14-byte header and room for a VLAN tag.
const MaxFrameBytes = 1518

// EtherTypes the switch forwards; anything else (IPv6 router
// solicitations, LLDP) is dropped as noise no node sends on purpose.
const (
	etherIPv4 = 0x0800
	etherARP  = 0x0806
)

// SwitchStats counts what the switch did with the frames it read.
type SwitchStats struct {
	Read, Delivered, Dropped, Lost, Duplicated, Held, Released, Overflow, Ignored uint64
}

// link is one direction between two ports.
type link struct{ from, to int }

// Switch forwards Ethernet frames between ports (TAP devices, one per
// network namespace) by destination MAC address, flooding broadcasts,
// and applies each directed link's Rule on the way. It is the nemesis's
// network: every fault between namespaces is a rule here.
type Switch struct {
	ports []io.ReadWriter
	macs  map[[6]byte]int

	mu    sync.Mutex
	rules map[link]Rule
	held  map[link][][]byte
	rng   *rand.Rand
	stats SwitchStats

	sched *scheduler
	wg    sync.WaitGroup
	// heldHook, when set (by tests), is told of every frame held.
	heldHook chan struct{}
}

// NewSwitch returns a switch between ports; macs maps each port's MAC
// address to its index. seed fixes the draws of loss, duplication,
// jitter and reordering. Run starts it.
func NewSwitch(ports []io.ReadWriter, macs map[string]int, seed uint64) (*Switch, error) {
	s := &Switch{ports: ports, macs: map[[6]byte]int{}, rules: map[link]Rule{}, held: map[link][][]byte{},
		rng: rand.New(rand.NewPCG(seed, 0x5eed)), sched: newScheduler()}
	for m, i := range macs {
		hw, err := net.ParseMAC(m)
		if err != nil || len(hw) != 6 {
			return nil, fmt.Errorf("nemesis: switch MAC %q: not a 6-byte MAC address", m)
		}
		if i < 0 || i >= len(ports) {
			return nil, fmt.Errorf("nemesis: switch MAC %s names port %d of %d", m, i, len(ports))
		}
		s.macs[[6]byte(hw)] = i
	}
	return s, nil
}

// Run starts forwarding frames, until each port's Read fails (the ports
// were closed); it returns at once.
func (s *Switch) Run() {
	go s.sched.run(s.write)
	for i := range s.ports {
		s.wg.Add(1)
		go s.read(i)
	}
}

// Wait blocks until every port's reader has stopped, and stops the
// scheduler: call it after closing the ports.
func (s *Switch) Wait() {
	s.wg.Wait()
	s.sched.stop()
}

// Set makes r the rule of the link from port from to port to. Lifting a
// hold delivers what it queued, in order, before any later frame.
func (s *Switch) Set(from, to int, r Rule) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if from == to || from < 0 || to < 0 || from >= len(s.ports) || to >= len(s.ports) {
		return fmt.Errorf("nemesis: no link from port %d to port %d of %d", from, to, len(s.ports))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := link{from, to}
	if r.clear() {
		delete(s.rules, l)
	} else {
		s.rules[l] = r
	}
	if !r.Hold {
		s.release(l)
	}
	return nil
}

// Clear lifts every rule, releasing every hold.
func (s *Switch) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for l := range s.rules {
		delete(s.rules, l)
		s.release(l)
	}
}

// release hands the frames held on l to the scheduler, in order.
func (s *Switch) release(l link) {
	for _, f := range s.held[l] {
		s.stats.Released++
		s.sched.add(0, l.to, f)
	}
	delete(s.held, l)
}

// Stats returns the counts so far.
func (s *Switch) Stats() SwitchStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// read forwards the frames of port i until its Read fails.
func (s *Switch) read(i int) {
	defer s.wg.Done()
	buf := make([]byte, MaxFrameBytes)
	for {
		n, err := s.ports[i].Read(buf)
		if err != nil {
			return // the port was closed (a TAP device has no transient read error)
		}
		s.forward(i, append([]byte(nil), buf[:n]...))
	}
}

// forward applies the rules of every link a frame from port i takes.
func (s *Switch) forward(i int, f []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Read++
	if len(f) < 14 {
		s.stats.Ignored++
		return
	}
	if t := int(f[12])<<8 | int(f[13]); t != etherIPv4 && t != etherARP {
		s.stats.Ignored++
		return
	}
	for _, to := range s.destinations(i, [6]byte(f[:6])) {
		l := link{i, to}
		v := decide(s.rules[l], s.rng)
		switch {
		case v.hold && len(s.held[l]) >= MaxHeldFrames:
			s.stats.Overflow++
		case v.hold:
			s.stats.Held++
			s.held[l] = append(s.held[l], f)
			select {
			case s.heldHook <- struct{}{}:
			default:
			}
		case len(v.delays) == 0 && s.rules[l].Drop:
			s.stats.Dropped++
		case len(v.delays) == 0:
			s.stats.Lost++
		}
		if len(v.delays) > 1 {
			s.stats.Duplicated++
		}
		for _, d := range v.delays {
			s.sched.add(d, to, f)
		}
	}
}

// destinations is where a frame from port i to MAC dst goes: its port,
// or every other port for a broadcast, a multicast or an unknown MAC.
func (s *Switch) destinations(i int, dst [6]byte) []int {
	if to, ok := s.macs[dst]; ok && dst[0]&1 == 0 {
		if to == i {
			return nil
		}
		return []int{to}
	}
	out := make([]int, 0, len(s.ports)-1)
	for to := range s.ports {
		if to != i {
			out = append(out, to)
		}
	}
	return out
}

// write delivers one frame; a port that refuses it loses it.
func (s *Switch) write(to int, f []byte) {
	if _, err := s.ports[to].Write(f); err == nil {
		s.mu.Lock()
		s.stats.Delivered++
		s.mu.Unlock()
	}
}

// scheduler delivers frames at their times, in (time, insertion) order.
type scheduler struct {
	mu   sync.Mutex
	q    frameQueue
	seq  uint64
	wake chan struct{}
	done chan struct{}
}

func newScheduler() *scheduler {
	return &scheduler{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// add queues f for port to, after d.
func (c *scheduler) add(d time.Duration, to int, f []byte) {
	c.mu.Lock()
	c.seq++
	heap.Push(&c.q, queued{at: time.Now().Add(d), seq: c.seq, to: to, frame: f})
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *scheduler) stop() { close(c.done) }

// run delivers due frames with deliver until stop.
func (c *scheduler) run(deliver func(to int, f []byte)) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		c.mu.Lock()
		var due []queued
		now := time.Now()
		for c.q.Len() > 0 && !c.q[0].at.After(now) {
			due = append(due, heap.Pop(&c.q).(queued))
		}
		wait := time.Hour
		if c.q.Len() > 0 {
			wait = c.q[0].at.Sub(now)
		}
		c.mu.Unlock()
		for _, q := range due {
			deliver(q.to, q.frame)
		}
		t.Reset(wait)
		select {
		case <-c.done:
			return
		case <-c.wake:
		case <-t.C:
		}
	}
}

type queued struct {
	at    time.Time
	seq   uint64
	to    int
	frame []byte
}

// frameQueue is a min-heap of queued frames by (at, seq).
type frameQueue []queued

func (q frameQueue) Len() int { return len(q) }
func (q frameQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q frameQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *frameQueue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *frameQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
