package nemesis

import (
	"fmt"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// memPort is an in-memory port: the test sends frames into the switch
// with send and reads what the switch delivered with got.
type memPort struct {
	in   chan []byte
	mu   sync.Mutex
	out  [][]byte
	once sync.Once
}

func newMemPort() *memPort { return &memPort{in: make(chan []byte, 64)} }

func (p *memPort) Read(b []byte) (int, error) {
	f, ok := <-p.in
	if !ok {
		return 0, io.EOF
	}
	return copy(b, f), nil
}

func (p *memPort) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out = append(p.out, append([]byte(nil), b...))
	return len(b), nil
}

func (p *memPort) close() { p.once.Do(func() { close(p.in) }) }

func (p *memPort) got() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.out...)
}

// testSwitch is a switch between n in-memory ports, with MACs of the
// topology's pattern.
func testSwitch(t *testing.T, n int) (*Switch, []*memPort) {
	t.Helper()
	ports := make([]*memPort, n)
	rw := make([]io.ReadWriter, n)
	macs := map[string]int{}
	for i := range ports {
		ports[i] = newMemPort()
		rw[i] = ports[i]
		macs[fmt.Sprintf(macPattern, i+1)] = i
	}
	s, err := NewSwitch(rw, macs, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.Run()
	t.Cleanup(func() {
		for _, p := range ports {
			p.close()
		}
		s.Wait()
	})
	return s, ports
}

// frame is an IPv4 frame from port from to port to (to < 0: broadcast),
// its payload tagged with n.
func frame(from, to, n int) []byte {
	f := make([]byte, 20)
	dst := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if to >= 0 {
		dst = []byte{0x02, 0xc6, 0x12, 0, 0, byte(to + 1)}
	}
	copy(f, dst)
	copy(f[6:], []byte{0x02, 0xc6, 0x12, 0, 0, byte(from + 1)})
	f[12], f[13] = 0x08, 0x00
	f[19] = byte(n)
	return f
}

func tags(fs [][]byte) []int {
	out := make([]int, len(fs))
	for i, f := range fs {
		out[i] = int(f[19])
	}
	return out
}

func equal(a, b []int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestSwitchForwardsByMAC proves a unicast frame reaches its port only,
// a broadcast every other port, and a frame that is not IPv4 or ARP
// none.
func TestSwitchForwardsByMAC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, ports := testSwitch(t, 3)
		// Each port has a goroutine of its own, so frames from two ports
		// have no order until one is through.
		ports[0].in <- frame(0, 2, 1)
		synctest.Wait()
		ports[1].in <- frame(1, -1, 2)
		v6 := frame(0, 1, 3)
		v6[12], v6[13] = 0x86, 0xdd
		ports[0].in <- v6
		synctest.Wait()
		if got := tags(ports[2].got()); !equal(got, []int{1, 2}) {
			t.Errorf("port 2 got %v, want [1 2]", got)
		}
		if got := tags(ports[0].got()); !equal(got, []int{2}) {
			t.Errorf("port 0 got %v, want [2]", got)
		}
		if got := tags(ports[1].got()); len(got) != 0 {
			t.Errorf("port 1 got %v, want nothing (its frames were a broadcast it sent and an IPv6 frame)", got)
		}
		if st := s.Stats(); st.Ignored != 1 {
			t.Errorf("got %d ignored frames, want 1", st.Ignored)
		}
	})
}

// TestSwitchDropIsOneWay proves a drop rule loses the frames of its
// direction only, and that lifting it forwards again.
func TestSwitchDropIsOneWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, ports := testSwitch(t, 2)
		if err := s.Set(0, 1, Rule{Drop: true}); err != nil {
			t.Fatal(err)
		}
		ports[0].in <- frame(0, 1, 1)
		ports[1].in <- frame(1, 0, 2)
		synctest.Wait()
		if err := s.Set(0, 1, Rule{}); err != nil {
			t.Fatal(err)
		}
		ports[0].in <- frame(0, 1, 3)
		synctest.Wait()
		if got := tags(ports[1].got()); !equal(got, []int{3}) {
			t.Errorf("port 1 got %v, want [3]: 1 was dropped", got)
		}
		if got := tags(ports[0].got()); !equal(got, []int{2}) {
			t.Errorf("port 0 got %v, want [2]: the other direction is open", got)
		}
	})
}

// TestSwitchHoldReleasesInOrder proves a held link delivers nothing
// until the heal, then everything it queued, in order, before the
// frames sent after the heal.
func TestSwitchHoldReleasesInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, ports := testSwitch(t, 2)
		if err := s.Set(0, 1, Rule{Hold: true}); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			ports[0].in <- frame(0, 1, i)
		}
		time.Sleep(time.Minute) // fake time: a minute of cut
		synctest.Wait()
		if got := ports[1].got(); len(got) != 0 {
			t.Fatalf("port 1 got %v during the hold, want nothing", tags(got))
		}
		s.Clear()
		ports[0].in <- frame(0, 1, 4)
		synctest.Wait()
		if got := tags(ports[1].got()); !equal(got, []int{1, 2, 3, 4}) {
			t.Errorf("port 1 got %v after the heal, want [1 2 3 4]", got)
		}
		if st := s.Stats(); st.Held != 3 || st.Released != 3 {
			t.Errorf("got held %d released %d, want 3 and 3", st.Held, st.Released)
		}
	})
}

// TestSwitchDelayAndDup proves a delayed link delivers no frame before
// its delay, every frame after it, and a duplicating one each frame
// twice.
func TestSwitchDelayAndDup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, ports := testSwitch(t, 2)
		if err := s.Set(0, 1, Rule{Delay: 200 * time.Millisecond, Dup: 1}); err != nil {
			t.Fatal(err)
		}
		ports[0].in <- frame(0, 1, 1)
		time.Sleep(199 * time.Millisecond)
		synctest.Wait()
		if got := ports[1].got(); len(got) != 0 {
			t.Fatalf("port 1 got %v before the delay, want nothing", tags(got))
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := tags(ports[1].got()); !equal(got, []int{1, 1}) {
			t.Errorf("port 1 got %v, want [1 1]", got)
		}
	})
}

// TestSwitchRefusesBadLinks proves Set names a link that does not exist
// and a rule out of range.
func TestSwitchRefusesBadLinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := testSwitch(t, 2)
		for _, c := range []struct {
			from, to int
			r        Rule
		}{{0, 0, Rule{}}, {0, 2, Rule{}}, {-1, 1, Rule{}}, {0, 1, Rule{Loss: 2}}} {
			if err := s.Set(c.from, c.to, c.r); err == nil {
				t.Errorf("Set(%d, %d, %+v): got nil, want an error", c.from, c.to, c.r)
			}
		}
	})
}
