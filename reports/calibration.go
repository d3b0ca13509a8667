package reports

import (
	"maps"
	"math"
	"slices"
	"sort"
)

// baseline is the unloaded RTT of each calibrated request length for one
// transport: the median of the calibrate-phase RTTs of that length.
type baseline struct {
	lengths []int64   // ascending
	rtts    []float64 // ns, median per length
	samples int       // calibration RPCs; 0 when taken from the manifest
	source  string    // where the values come from
}

// newBaseline builds a baseline from calibration RTTs by length; nil when
// there is no calibration data.
func newBaseline(byLen map[int64][]int64) *baseline {
	if len(byLen) == 0 {
		return nil
	}
	b := &baseline{}
	for l := range byLen {
		b.lengths = append(b.lengths, l)
	}
	slices.Sort(b.lengths)
	for _, l := range b.lengths {
		v := byLen[l]
		slices.Sort(v)
		b.rtts = append(b.rtts, float64(v[Rank(len(v), 0.5)-1]))
		b.samples += len(v)
	}
	return b
}

// at returns the unloaded RTT (ns) for a request length: the calibrated
// value of that length, else interpolated linearly in log(length) between the
// nearest calibrated lengths, else the nearest one outside their range.
func (b *baseline) at(length int64) float64 {
	i := sort.Search(len(b.lengths), func(i int) bool { return b.lengths[i] >= length })
	switch {
	case i < len(b.lengths) && b.lengths[i] == length:
		return b.rtts[i]
	case i == 0:
		return b.rtts[0]
	case i == len(b.lengths):
		return b.rtts[len(b.rtts)-1]
	}
	l0, l1 := float64(b.lengths[i-1]), float64(b.lengths[i])
	x := float64(max(length, 1))
	f := (math.Log(x) - math.Log(max(l0, 1))) / (math.Log(l1) - math.Log(max(l0, 1)))
	return b.rtts[i-1] + f*(b.rtts[i]-b.rtts[i-1])
}

// slowdown is RTT over the unloaded RTT of that length, clipped at 1 as HPCC
// does: a loaded RPC cannot beat the unloaded median by more than noise, and
// clipping keeps log axes meaningful.
func (b *baseline) slowdown(s sample) float64 {
	base := b.at(s.length)
	if base <= 0 {
		return math.NaN()
	}
	return max(float64(s.rtt)/base, 1)
}

// manifestBaseline builds a baseline from manifest.json's calibration
// digest (length -> median RTT in µs); nil when it has no usable entry.
func manifestBaseline(rttUs map[uint32]float64) *baseline {
	byLen := map[int64]float64{}
	for l, us := range rttUs {
		if us > 0 {
			byLen[int64(l)] = us * 1e3
		}
	}
	if len(byLen) == 0 {
		return nil
	}
	b := &baseline{source: "manifest.json calibration"}
	b.lengths = slices.Sorted(maps.Keys(byLen))
	for _, l := range b.lengths {
		b.rtts = append(b.rtts, byLen[l])
	}
	return b
}
