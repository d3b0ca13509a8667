package testbed

import "math"

// unschedBytes is Homa's RTTbytes for a link: what the link carries while
// a full-size DATA packet travels to the receiver and its grant comes back
// (the Homa paper's definition), rounded up to whole packets. The
// calibrated round trip is a small message's, so the two full-packet
// serialisations it lacks (the sender's link and the switch's egress,
// store and forward) are added: without them a lone message's grants
// arrive after its window has drained and the downlink idles.
func unschedBytes(rateBps uint64, smallRTTus float64, mtu int) uint32 {
	payload := float64(mtu - 20 - 60) // IPv4 and a generous Homa DATA header
	bytes := float64(rateBps)/8*smallRTTus/1e6 + 2*float64(mtu)
	return uint32(math.Max(1, math.Ceil(bytes/payload)) * payload)
}
