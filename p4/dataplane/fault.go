package dataplane

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// faultInjector drops frames leaving one port. Settings change at run time
// through atomics; the counter and random source belong to the port's
// scheduler goroutine alone.
type faultInjector struct {
	probBits atomic.Uint64 // math.Float64bits of the drop probability
	everyN   atomic.Uint64
	drops    atomic.Uint64

	seen uint64
	rng  *rand.PCG
}

func newFaultInjector(port uint16, f Fault) *faultInjector {
	fi := &faultInjector{rng: rand.NewPCG(uint64(port), 0x9e3779b97f4a7c15)}
	fi.set(f)
	return fi
}

func (fi *faultInjector) set(f Fault) {
	fi.probBits.Store(math.Float64bits(f.DropProb))
	fi.everyN.Store(f.EveryN)
}

func (fi *faultInjector) get() Fault {
	return Fault{DropProb: math.Float64frombits(fi.probBits.Load()), EveryN: fi.everyN.Load()}
}

// drop decides the fate of the next frame and counts the dropped ones.
func (fi *faultInjector) drop() bool {
	fi.seen++
	d := false
	if n := fi.everyN.Load(); n > 0 && fi.seen%n == 0 {
		d = true
	}
	if p := math.Float64frombits(fi.probBits.Load()); p > 0 {
		// 53 random bits give a uniform float in [0, 1).
		if float64(fi.rng.Uint64()>>11)/(1<<53) < p {
			d = true
		}
	}
	if d {
		fi.drops.Add(1)
	}
	return d
}
