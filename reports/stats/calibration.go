package stats

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/rundir"
)

// Slowdown divides an RPC's RTT by the ideal RTT of that RPC on this fabric
// (idealRTT), the same for every transport, as cperf and the Homa papers
// do. A transport's own unloaded RTT (ownBaseline) is kept as a second,
// separately named baseline. Neither is clipped: a slowdown below 1 means
// the RPC beat the baseline (docs/reports.md).

// headerBytes is what the ideal transport adds to each packet: an IPv4
// header and a minimal 20-byte transport header.
const headerBytes = 40

// idealRTT is the ideal RTT of an RPC: the fabric's measured unloaded RTT of
// its smallest RPC (the base), plus the time the request and the response
// take beyond the base's on the wire, at the link rate, stored and forwarded
// on every link they cross. A message of n bytes crossing k links takes
// wire(n)/rate on its slowest link plus one first packet's time on each of
// the k-1 others (the packets pipeline).
type idealRTT struct {
	baseNs            float64
	baseReq, baseResp int64
	baseLinks         int
	rateBps           float64
	// uplinkBps is the links' between switches (0: rateBps).
	uplinkBps     float64
	mtu, overhead int
	source        string
	// hopNs is the fixed latency a simulated run charges per link beyond
	// its serialisation: a link's delay and the switch it leads to
	// (simulation.link_delay and switch_delay; 0 in emulated runs, whose
	// base holds the machine's). A path longer than the base's pays it
	// for each further link, each way.
	hopNs float64
	// oneWay: the run timed one-way messages (calibration one_way_us),
	// so the ideal is a message's one way, with no response.
	oneWay bool
}

// wire is the bytes a message of n bytes takes on a link, and those of its
// first packet; an empty message is one packet.
func (id *idealRTT) wire(n int64) (all, first float64) {
	payload := int64(max(id.mtu-headerBytes, 1))
	pkts := max((n+payload-1)/payload, 1)
	per := float64(headerBytes + id.overhead)
	return float64(n) + float64(pkts)*per, float64(min(n, payload)) + per
}

// transfer is the ns a message of n bytes takes over links links: all
// of it at the hosts' rate, and store and forward, its first packet once
// more on each further link, at the hosts' rate on the second host link
// and at the uplinks' rate between switches.
func (id *idealRTT) transfer(n int64, links int) float64 {
	all, first := id.wire(n)
	up := id.uplinkBps
	if up == 0 {
		up = id.rateBps
	}
	ns := (all + float64(min(max(links-1, 0), 1))*first) * 8 / id.rateBps * 1e9
	return ns + float64(max(links-2, 0))*first*8/up*1e9
}

// at returns the ideal RTT (ns) of an RPC; links 0 (unknown) is taken as
// the base's path.
func (id *idealRTT) at(req, resp int64, links int) float64 {
	if links == 0 {
		links = id.baseLinks
	}
	ways := 2.0
	if id.oneWay {
		ways = 1
	}
	return id.baseNs + id.transfer(req, links) + id.transfer(resp, links) -
		id.transfer(id.baseReq, id.baseLinks) - id.transfer(id.baseResp, id.baseLinks) +
		ways*float64(links-id.baseLinks)*id.hopNs
}

// answerReturn is the one way (ns) of a 1-byte answer on the base path,
// for a transport whose unloaded RTT of a length-byte request with a
// 1-byte answer is rtt: half of what that RTT spends beyond the two
// messages' transfers, plus the answer's transfer. 0 when the
// calibration timed one-way messages: its ideal has no answer to return.
func (id *idealRTT) answerReturn(length int64, rtt float64) float64 {
	if id.oneWay {
		return 0
	}
	answer := id.transfer(1, id.baseLinks)
	fixed := rtt - id.transfer(length, id.baseLinks) - answer
	return max(fixed, 0)/2 + answer
}

// simulatedHop is the fixed latency per link a simulated run charged
// (its scenario's simulation block), 0 for other runs.
func simulatedHop(man *Manifest) float64 {
	if man.Mode != rundir.ModeSimulated {
		return 0
	}
	sim, _ := MapOf(man.Scenario)["simulation"].(map[string]any)
	var ns float64
	for _, k := range []string{"link_delay", "switch_delay"} {
		if v, ok := sim[k].(string); ok {
			if d, err := time.ParseDuration(v); err == nil {
				ns += float64(d.Nanoseconds())
			}
		}
	}
	return ns
}

// newIdeal picks the base, the smallest calibrated RPC's median RTT of the
// transport that was fastest at it, and the fabric. It returns nil without
// calibration or link rate; note says what was assumed, if anything.
func newIdeal(calib map[string]map[int64]*calibPoint, man *Manifest) (id *idealRTT, note string) {
	id = &idealRTT{baseNs: math.Inf(1)}
	if f := man.Fabric; f != nil {
		id.rateBps, id.mtu, id.overhead = float64(f.LinkBps), f.MTU, f.FrameOverhead
		id.uplinkBps = float64(f.UplinkBps)
	} else {
		id.rateBps, id.mtu, id.overhead = float64(man.RateBps()), 1500, fabric.Framing
		note = fmt.Sprintf("manifest.json describes no fabric: the ideal RTT assumes MTU %d, %d B framing and 2 links each way", id.mtu, id.overhead)
	}
	id.hopNs = simulatedHop(man)
	for _, c := range man.Calibration {
		id.oneWay = id.oneWay || len(c.OneWayUs) > 0
	}
	for _, tr := range slices.Sorted(maps.Keys(calib)) {
		byLen := calib[tr]
		l := slices.Min(slices.Collect(maps.Keys(byLen)))
		p := byLen[l]
		if med := medianNs(p.rtts); med < id.baseNs {
			id.baseNs, id.baseReq, id.baseResp, id.baseLinks = med, l, p.resp, int(p.links)
			id.source = fmt.Sprintf("median unloaded RTT of %s's %d B requests with %d B responses (%d RPCs), the fastest transport's smallest calibrated RPC",
				tr, l, p.resp, len(p.rtts))
		}
	}
	if math.IsInf(id.baseNs, 1) {
		// No calibration rows: the manifest's digest of them.
		for _, tr := range slices.Sorted(maps.Keys(man.Calibration)) {
			rtt := man.Calibration[tr].RTTus
			if len(rtt) == 0 {
				continue
			}
			l := slices.Min(slices.Collect(maps.Keys(rtt)))
			resp := int64(man.Calibration[tr].ResponseBytes)
			if resp == 0 {
				resp = int64(l) // echoed
			}
			if us := rtt[l]; us > 0 && us*1e3 < id.baseNs {
				id.baseNs, id.baseReq, id.baseResp = us*1e3, int64(l), resp
				id.source = fmt.Sprintf("median unloaded RTT of %s's %d B calibration RPCs (manifest.json)", tr, l)
			}
		}
	}
	if math.IsInf(id.baseNs, 1) || id.rateBps <= 0 {
		return nil, note
	}
	if id.baseLinks == 0 {
		id.baseLinks = 2
	}
	return id, note
}

func medianNs(v []int64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return float64(s[Rank(len(s), 0.5)-1])
}

// ownBaseline is one transport's own unloaded RTT by request length: the
// median of its calibration RPCs of each length (with the calibration's
// response sizes), linear in length in between, since time grows linearly
// with length.
type ownBaseline struct {
	lengths []int64   // ascending
	rtts    []float64 // ns, median per length
	resps   []int64   // the response bytes of each length's RPCs
	samples int       // calibration RPCs; 0 when taken from the manifest
	source  string    // where the values come from
}

// NewOwnBaseline builds a baseline from calibration RPCs by length; nil
// when there are none.
func NewOwnBaseline(byLen map[int64]*calibPoint) *ownBaseline {
	if len(byLen) == 0 {
		return nil
	}
	b := &ownBaseline{lengths: slices.Sorted(maps.Keys(byLen))}
	for _, l := range b.lengths {
		b.rtts = append(b.rtts, medianNs(byLen[l].rtts))
		b.resps = append(b.resps, byLen[l].resp)
		b.samples += len(byLen[l].rtts)
	}
	return b
}

// manifestBaseline builds a baseline from manifest.json's calibration
// digest (length -> median RTT in µs) and response length (0: echoed);
// nil when it has no usable entry.
func manifestBaseline(rttUs map[uint32]float64, resp uint32) *ownBaseline {
	byLen := map[int64]float64{}
	for l, us := range rttUs {
		if us > 0 {
			byLen[int64(l)] = us * 1e3
		}
	}
	if len(byLen) == 0 {
		return nil
	}
	b := &ownBaseline{source: "manifest.json calibration"}
	b.lengths = slices.Sorted(maps.Keys(byLen))
	for _, l := range b.lengths {
		b.rtts = append(b.rtts, byLen[l])
		r := int64(resp)
		if r == 0 {
			r = l
		}
		b.resps = append(b.resps, r)
	}
	return b
}

// withAnswer returns the unloaded RTT (ns) of a request of length with an
// answer of answer bytes: the calibrated RTT at length (as at), with the
// calibration's response's time on the wire (its own length, or length
// when echoed) replaced by answer's, by the fabric's wire time (id) over
// the base path. With the calibration's responses answer bytes long, it
// is at(length) exactly.
func (b *ownBaseline) withAnswer(length, answer int64, id *idealRTT) float64 {
	ns := b.At(length)
	resp := b.resps[0]
	if resp == b.lengths[0] && len(b.lengths) > 1 && b.resps[1] == b.lengths[1] {
		resp = length // echoed
	}
	if resp != answer && id != nil {
		ns += id.transfer(answer, id.baseLinks) - id.transfer(resp, id.baseLinks)
	}
	return ns
}

// At returns the unloaded RTT (ns) for a request length: the calibrated
// value of that length, else linear between the nearest calibrated lengths,
// else the nearest one below the range and the last segment's line above
// it.
func (b *ownBaseline) At(length int64) float64 {
	i := sort.Search(len(b.lengths), func(i int) bool { return b.lengths[i] >= length })
	switch {
	case i < len(b.lengths) && b.lengths[i] == length:
		return b.rtts[i]
	case i == 0:
		return b.rtts[0]
	case i == len(b.lengths):
		if i < 2 {
			return b.rtts[i-1]
		}
		i-- // extend the last segment
	}
	l0, l1 := float64(b.lengths[i-1]), float64(b.lengths[i])
	f := (float64(length) - l0) / (l1 - l0)
	return b.rtts[i-1] + f*(b.rtts[i]-b.rtts[i-1])
}
