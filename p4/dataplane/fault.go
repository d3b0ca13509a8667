package dataplane

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/homatb/homatb/p4/switchstats"
)

// Direction says which frames of a port a fault's loss rules apply to.
type Direction uint8

// Directions of a fault, seen from the switch. The zero value is Egress,
// the only direction before directions existed.
const (
	// Egress frames are those the port sends: towards the host (or the
	// switch) at the other end of its link.
	Egress Direction = iota
	// Ingress frames are those the port receives: from the other end.
	Ingress
	// Both is either way.
	Both
)

// String is the direction's name in the admin API: egress, ingress, both.
func (d Direction) String() string {
	switch d {
	case Egress:
		return switchstats.DirectionEgress
	case Ingress:
		return switchstats.DirectionIngress
	case Both:
		return switchstats.DirectionBoth
	}
	return fmt.Sprintf("direction(%d)", uint8(d))
}

// ParseDirection reads "egress", "ingress" or "both".
func ParseDirection(s string) (Direction, error) {
	for _, d := range []Direction{Egress, Ingress, Both} {
		if s == d.String() {
			return d, nil
		}
	}
	return 0, fmt.Errorf("direction %q: expected egress, ingress or both", s)
}

// covers reports whether loss in direction d applies to frames going way.
func (d Direction) covers(way Direction) bool { return d == Both || d == way }

// faultInjector drops frames of one port: by the loss rules in the fault's
// direction, and every frame either way while the link is down. Settings
// change at run time through atomics (a frame racing a change may see the
// old rules for one field and the new for another, which is harmless); each
// side's counter and random source belong to the goroutine that handles
// that side (the port's scheduler for egress, its receiver for ingress).
type faultInjector struct {
	probBits  atomic.Uint64 // math.Float64bits of the drop probability
	everyN    atomic.Uint64
	dir       atomic.Uint32
	downUntil atomic.Int64 // dataplane clock (ns); the link is down before it
	drops     atomic.Uint64

	egress, ingress faultSide
}

// faultSide is the state of one direction's loss rules.
type faultSide struct {
	seen uint64
	rng  *rand.PCG
}

func newFaultInjector(port uint16, f Fault) *faultInjector {
	fi := &faultInjector{
		egress:  faultSide{rng: rand.NewPCG(uint64(port), 0x9e3779b97f4a7c15)},
		ingress: faultSide{rng: rand.NewPCG(uint64(port), 0x2545f4914f6cdd1d)},
	}
	fi.set(f)
	return fi
}

func (fi *faultInjector) set(f Fault) {
	fi.probBits.Store(math.Float64bits(f.DropProb))
	fi.everyN.Store(f.EveryN)
	fi.dir.Store(uint32(f.Direction))
}

func (fi *faultInjector) get() Fault {
	return Fault{DropProb: math.Float64frombits(fi.probBits.Load()), EveryN: fi.everyN.Load(),
		Direction: Direction(fi.dir.Load())}
}

// setDown takes the link down until the dataplane time until (a time in
// the past brings it up).
func (fi *faultInjector) setDown(until int64) { fi.downUntil.Store(until) }

// dropEgress decides the fate of the next frame the port sends at now.
func (fi *faultInjector) dropEgress(now int64) bool { return fi.drop(&fi.egress, Egress, now) }

// dropIngress decides the fate of the next frame the port received at now.
func (fi *faultInjector) dropIngress(now int64) bool { return fi.drop(&fi.ingress, Ingress, now) }

// drop applies the down window and, if the fault covers way, the loss
// rules to one frame, and counts the dropped ones.
func (fi *faultInjector) drop(side *faultSide, way Direction, now int64) bool {
	d := now < fi.downUntil.Load()
	if !d && Direction(fi.dir.Load()).covers(way) {
		side.seen++
		if n := fi.everyN.Load(); n > 0 && side.seen%n == 0 {
			d = true
		}
		if p := math.Float64frombits(fi.probBits.Load()); p > 0 {
			// 53 random bits give a uniform float in [0, 1).
			if float64(side.rng.Uint64()>>11)/(1<<53) < p {
				d = true
			}
		}
	}
	if d {
		fi.drops.Add(1)
	}
	return d
}
