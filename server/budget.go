package server

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/chronos-timer/chronos/server/config"
)

// fallbackMemory is the memory assumed when neither a limit nor the
// machine's memory can be read.
const fallbackMemory = 2 << 30

// timerBudget is the byte budget of held timers: MaxTimerBytes if set,
// otherwise seven eighths of the soft memory limit ([limits] memory_limit,
// or GOMEMLIMIT), leaving the rest to requests in flight and the runtime;
// without a limit the collector lets the heap grow to twice what is live,
// so seven sixteenths of the memory the process may use (its cgroup's
// limit, or the machine's). A node past its budget refuses writes with
// 503 instead of growing until the kernel kills it.
func timerBudget(c config.Node) int64 {
	if c.MaxTimerBytes > 0 {
		return c.MaxTimerBytes
	}
	limit := c.MemoryLimit
	if limit == 0 {
		limit = debug.SetMemoryLimit(-1) // GOMEMLIMIT's, or MaxInt64 for none
	}
	if limit > 0 && limit < math.MaxInt64 {
		return max(limit/8*7, config.MinTimerBytes)
	}
	return max(availableMemory()/16*7, config.MinTimerBytes)
}

// availableMemory is the memory the process may use: its cgroup's limit
// when it has one, else the machine's (Linux), else fallbackMemory.
func availableMemory() int64 {
	mem := int64(fallbackMemory)
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64); err == nil {
					mem = kb << 10
				}
			}
		}
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			mem = min(mem, n)
		}
	}
	return mem
}
