// Package memlimit keeps a process's resident memory at what its live heap
// needs: the collector runs when the process's memory reaches a soft memory
// limit that follows the live heap (Limit: the live heap, most of the room
// GOGC would give it, and the runtime's memory outside the heap), instead
// of where GOGC's pacer estimates it should start.
//
// Left alone, the Go runtime keeps the heap pages a collection cycle
// touched as long as they stay within 10% over the heap goal, and the
// pacer starts a cycle earlier or later as it learns the process's
// allocation and marking, and later still under a busy machine's delays. So
// the resident size of a process with a flat live heap climbs in steps to
// the highest peak any cycle reached, at moments that depend on the
// machine's load. A host agent measured that way (runtime metrics beside its
// resident size, over ten minutes) kept its live heap at 6.6 to 7.0 MiB, its
// heap goal at 18.8 to 19.6 MiB and its goroutines, stacks and metadata flat,
// while the heap pages it kept rose from 16.7 to 20.4 MiB in steps. With
// GOGC's trigger replaced by the limit, the runtime returns what lies above
// the limit's line from the first cycles on, so the resident size follows
// the live heap instead of the highest peak.
package memlimit

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// The runtime/metrics the limit is computed from.
const (
	mLive     = "/gc/heap/live:bytes"
	mStack    = "/gc/scan/stack:bytes"
	mGlobals  = "/gc/scan/globals:bytes"
	mCycles   = "/gc/cycles/total:gc-cycles"
	mTotal    = "/memory/classes/total:bytes"
	mObjects  = "/memory/classes/heap/objects:bytes"
	mUnused   = "/memory/classes/heap/unused:bytes"
	mFree     = "/memory/classes/heap/free:bytes"
	mReleased = "/memory/classes/heap/released:bytes"
)

// names are the metrics a Snapshot reads, in its order.
func names() []string {
	return []string{mLive, mStack, mGlobals, mCycles, mTotal, mObjects, mUnused, mFree, mReleased}
}

// Snapshot is what of the runtime's state the limit depends on.
type Snapshot struct {
	// Live is the heap the last collection marked; Stack and Globals the
	// stacks and globals it scanned.
	Live, Stack, Globals uint64
	// Cycles counts completed collections.
	Cycles uint64
	// Total is all memory the runtime has mapped; Heap the part of it
	// that is the heap (objects, unused and free spans, released pages).
	Total, Heap uint64
}

// Read takes a Snapshot of this process's runtime; it does not stop the
// world.
func Read() Snapshot {
	s := make([]metrics.Sample, len(names()))
	for i, n := range names() {
		s[i].Name = n
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return Snapshot{Live: v(0), Stack: v(1), Globals: v(2), Cycles: v(3),
		Total: v(4), Heap: v(5) + v(6) + v(7) + v(8)}
}

// room is the part of the room GOGC gives the heap over its live part
// (live + stacks + globals, times GOGC/100) that the limit gives it. The
// runtime returns what lies above 95% of the limit; at the whole room that
// line lay above what an agent's cycles of its first minutes reached (its
// memory 85 to 92% of the limit then), so its resident size still climbed
// to it over the run. At 70% the line lies below them and the resident
// size stays at it from the first minute; the collector runs about 1/0.7
// times as often (an agent of the soak: every 10 to 15 s instead of every
// 20 or so), each time over a live heap of a few MiB.
const room = 0.7

// Limit is the soft memory limit for s under GOGC percent: the live heap,
// room times the room GOGC gives it over that (the runtime's formula: (live
// + stacks + globals) x percent/100), and the runtime's memory outside the
// heap (stacks, metadata, buffers); false before the first collection (no
// live heap measured yet) or with percent off.
func Limit(s Snapshot, percent int) (int64, bool) {
	if s.Cycles == 0 || percent < 0 {
		return 0, false
	}
	grow := float64(s.Live+s.Stack+s.Globals) * float64(percent) / 100 * room
	return int64(s.Live+(s.Total-s.Heap)) + int64(grow), true
}

// Follow, from the first collection on, has the collector run at Limit
// alone: GOGC off and the soft memory limit at Limit under the GOGC it found,
// set again after every collection (checked every interval), so the limit
// follows the live heap up as well as down and a heap that needs more gets
// it one cycle later. When ctx ends it restores GOGC and the limit. It does
// nothing when a limit is already set (GOMEMLIMIT) or GOGC is off: the
// operator's choice stands.
func Follow(ctx context.Context, every time.Duration) {
	limit := debug.SetMemoryLimit(-1)
	percent := debug.SetGCPercent(-1)
	debug.SetGCPercent(percent) // GOGC stays until a limit replaces it
	if limit != math.MaxInt64 || percent < 0 {
		return
	}
	defer func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}()
	t := time.NewTicker(every)
	defer t.Stop()
	var seen uint64
	for {
		if s := Read(); s.Cycles != seen {
			seen = s.Cycles
			if l, ok := Limit(s, percent); ok {
				debug.SetMemoryLimit(l) // before GOGC goes off: never neither
				debug.SetGCPercent(-1)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Available is the memory the machine can give a process without
// swapping (MemAvailable of /proc/meminfo, in bytes); false where that
// is not known.
func Available() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	return parseAvailable(string(b))
}

// parseAvailable reads MemAvailable out of /proc/meminfo's text.
func parseAvailable(meminfo string) (int64, bool) {
	for line := range strings.Lines(meminfo) {
		rest, ok := strings.CutPrefix(line, "MemAvailable:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// Machine sets the soft memory limit at 80% of the memory the machine has
// available, unless a limit is set (GOMEMLIMIT): a process whose live heap
// grows towards it (a report of millions of RPCs) is collected more often
// instead of doubling past it, and one well below it keeps GOGC's pace.
func Machine() {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return
	}
	if a, ok := Available(); ok {
		debug.SetMemoryLimit(a / 5 * 4)
	}
}
