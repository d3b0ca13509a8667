package scenario

import (
	"fmt"
	"strings"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// MaxTCPMessageBytes is the longest message the kernel-TCP transports
// carry (hostagent/tcprpc.MaxMessage, which a test keeps equal).
const MaxTCPMessageBytes = 64 << 20

// MaxMessage is the longest request or response the transport's agent
// accepts: max_message_bytes (1,000,000 by default) on the Homa engine,
// tcprpc's frame limit on kernel TCP.
func (t Transport) MaxMessage() int {
	if !t.Engine() {
		return MaxTCPMessageBytes
	}
	if t.Homa.MaxMessageBytes != 0 {
		return int(t.Homa.MaxMessageBytes)
	}
	return homaconf.DefaultMaxMessageBytes
}

// transportHint suggests the spelling of a transport a scenario named
// wrongly: a congestion control is a kernel-TCP setting, a near miss gets
// the name it was probably meant to be; "" when nothing fits.
func transportHint(name string) string {
	cc := strings.TrimPrefix(strings.TrimPrefix(name, "tcp-"), "tcp_")
	switch cc {
	case "reno", "cubic", "bbr", "dctcp", "nv":
		return fmt.Sprintf("; %s is kernel TCP with a congestion control: write name: tcp with tcp: {congestion: %s}", name, cc)
	}
	best, bestD := "", 3
	for _, n := range TransportNames {
		if d := editDistance(strings.ToLower(name), n); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkMessageLimits checks every phase's longest request and response
// against each transport's message limit, which the agents enforce only
// once the network is built, and against the measurement: a message that
// takes longer than the measurement to cross its link cannot complete in
// it.
func (c *checker) checkMessageLimits(s *Scenario) {
	if c.sizeSpec == nil {
		return
	}
	for i, ph := range s.Phases {
		p := fmt.Sprintf("phases[%d]", i)
		st, err := c.sizeSpec(ph.Sizes)
		if err != nil || ph.Sizes == "" {
			continue // checkPhases has reported it
		}
		field, longest := p+".sizes", st.Max
		if int(ph.ResponseBytes) > longest {
			field, longest = p+".response_bytes", int(ph.ResponseBytes)
		}
		for j, t := range s.Transports {
			limit := t.MaxMessage()
			if longest <= limit {
				continue
			}
			fix := fmt.Sprintf(`truncate the sizes with ",max=%d"`, limit)
			if field == p+".response_bytes" {
				fix = fmt.Sprintf("expected response_bytes of at most %d", limit)
			}
			if t.Engine() && longest <= c.maxMessage() {
				fix += fmt.Sprintf(", or raise transports[%d].homa.max_message_bytes to %d", j, longest)
			}
			c.errorf(field, "messages up to %d bytes, but %s (transports[%d]) carries at most %d: %s", longest, t.Config(), j, limit, fix)
		}
		if s.Link.Rate == 0 || ph.Sizes == "" {
			continue
		}
		resp := ph.longestResponse(st)
		if wire := s.Fabric().WireTime(st.Max + resp); wire > s.Duration.D() {
			c.errorf("duration", "the longest RPC of phase %q (%d bytes and a %d-byte response) takes %s at the link rate %s, longer than the measurement: expected a duration of at least %s, or shorter messages",
				ph.Name, st.Max, resp, wire.Round(time.Microsecond), s.Link.Rate, roomFor(wire))
		}
	}
}

// checkCalibrationLimits checks the calibration's sizes against each
// transport's message limit: calibration measures every size with every
// transport, and the agent refuses a message over its limit.
func (c *checker) checkCalibrationLimits(s *Scenario) {
	if s.Calibration.Skip {
		return
	}
	for i, size := range s.Calibration.Sizes {
		for j, t := range s.Transports {
			if limit := t.MaxMessage(); int(size) > limit {
				if _, written := c.idx["calibration.sizes"]; written {
					c.errorf(fmt.Sprintf("calibration.sizes[%d]", i), "calibration size %d, but %s (transports[%d]) carries at most %d: expected calibration.sizes of at most %d",
						size, t.Config(), j, limit, limit)
				} else {
					c.errorf(fmt.Sprintf("transports[%d].homa.max_message_bytes", j), "%s carries at most %d bytes, but the default calibration sizes go to %d: write calibration.sizes of at most %d",
						t.Config(), limit, size, limit)
				}
				break
			}
		}
	}
}

// checkOverload refuses open-loop phases and bursts that offer some link
// more than its rate, unless allow_overload is set: no transport carries
// that, so the run would measure a growing backlog. The error sits on the
// phase that adds the most to the busiest link.
func (c *checker) checkOverload(s *Scenario) {
	if s.AllowOverload || c.sizeSpec == nil || s.Link.Rate == 0 || c.reported("phases", "link", "topology") {
		return // a field the load depends on is wrong: its load means nothing
	}
	total := LinkLoad{Up: map[string]float64{}, Down: map[string]float64{}}
	per := make([]LinkLoad, len(s.Phases))
	for i := range s.Phases {
		per[i] = LinkLoad{Up: map[string]float64{}, Down: map[string]float64{}}
		if per[i].addPhase(s, i, c.sizeSpec) != nil || total.addPhase(s, i, c.sizeSpec) != nil {
			return // checkPhases has reported it
		}
	}
	var parts []string
	worstHost, worstUp, worst := "", false, 1.0
	for _, dir := range []struct {
		name string
		up   bool
		m    map[string]float64
	}{{"downlink", false, total.Down}, {"uplink", true, total.Up}} {
		var over []string
		peak := 0.0
		for h, v := range dir.m {
			if v > 1+1e-9 {
				over = append(over, h)
				peak = max(peak, v)
				if v > worst {
					worstHost, worstUp, worst = h, dir.up, v
				}
			}
		}
		if len(over) == 0 {
			continue
		}
		sortHosts(over)
		plural := ""
		if len(over) > 1 {
			plural = "s"
		}
		parts = append(parts, fmt.Sprintf("the %s%s of %s at up to %.0f%%", dir.name, plural, hostList(over), 100*peak))
	}
	if len(parts) == 0 {
		c.checkFabricOverload(s)
		return
	}
	pi, share := 0, 0.0
	for i := range per {
		v := per[i].Down[worstHost]
		if worstUp {
			v = per[i].Up[worstHost]
		}
		if v > share {
			pi, share = i, v
		}
	}
	c.errorf(overloadField(s.Phases[pi], pi), "%s %s of the link rate %s (requests and responses together, on the wire for one-way or load_of: wire phases; responses echo the request when response_bytes is 0), beyond what any transport carries: %s, or set allow_overload: true to measure the backlog on purpose",
		overloadCause(s.Phases[pi]), strings.Join(parts, " and "), s.Link.Rate, overloadFix(s.Phases[pi], share, worst))
}

// checkFabricOverload refuses open-loop phases that load the uplinks of an
// oversubscribed tier beyond their rate (fabricOverload), unless
// allow_overload is set. The error sits on the phase that adds the most.
func (c *checker) checkFabricOverload(s *Scenario) {
	xs, err := fabricOverload(s, c.sizeSpec)
	if err != nil || len(xs) == 0 {
		return
	}
	x := xs[0]
	pi := 0
	for i, v := range x.PerPhase {
		if v > x.PerPhase[pi] {
			pi = i
		}
	}
	c.errorf(overloadField(s.Phases[pi], pi), "%s %s, beyond what any transport carries across the fabric: %s, more spines or a higher topology.uplink_rate, or set allow_overload: true to measure the backlog on purpose",
		overloadCause(s.Phases[pi]), x, overloadFix(s.Phases[pi], x.PerPhase[pi], x.Load))
}

// reported reports whether an error has been found under any of the
// top-level sections.
func (c *checker) reported(sections ...string) bool {
	for _, e := range c.errs {
		for _, sec := range sections {
			if e.Field == sec || strings.HasPrefix(e.Field, sec+".") || strings.HasPrefix(e.Field, sec+"[") {
				return true
			}
		}
	}
	return false
}

// overloadField is the field that sets a phase's offered load.
func overloadField(ph Phase, i int) string {
	p := fmt.Sprintf("phases[%d]", i)
	switch {
	case ph.Incast != nil:
		return p + ".incast.interval"
	case ph.Load > 0:
		return p + ".load"
	}
	return p + ".rate_rps"
}

func overloadCause(ph Phase) string {
	switch {
	case ph.Incast != nil:
		return fmt.Sprintf("phase %q's bursts (every client sends one RPC each %s) put", ph.Name, ph.Incast.Interval.D())
	case ph.Load > 0:
		return fmt.Sprintf("load %g of phase %q (with the other phases) puts", ph.Load, ph.Name)
	}
	return fmt.Sprintf("rate_rps %g of phase %q (with the other phases) puts", ph.RateRPS, ph.Name)
}

// overloadFix says what value of the phase's own setting would keep the
// busiest link at its rate, the other phases unchanged.
func overloadFix(ph Phase, share, worst float64) string {
	room := 1 - (worst - share) // what the other phases leave
	if room <= 0 || share <= 0 {
		return "the other phases already fill the link; lower their load"
	}
	f := room / share
	switch {
	case ph.Incast != nil:
		return fmt.Sprintf("expected an interval of at least %s", (time.Duration(float64(ph.Incast.Interval) / f)).Round(time.Microsecond))
	case ph.Load > 0:
		return fmt.Sprintf("expected a load of at most %.3g here", ph.Load*f)
	}
	return fmt.Sprintf("expected a rate_rps of at most %.4g here", ph.RateRPS*f)
}

// longestResponse is the response to phase ph's longest request, whose
// length st gives: response_bytes when set, none one way, else the
// request echoed.
func (ph *Phase) longestResponse(st SizeStats) int {
	if ph.ResponseBytes != 0 || ph.OneWay {
		return int(ph.ResponseBytes)
	}
	return st.Max
}

// roomFor is the measured time that leaves an RPC taking wire on its link
// as long again to be sent in: twice wire, rounded up to a whole
// millisecond past it.
func roomFor(wire time.Duration) time.Duration {
	return (2 * wire).Truncate(time.Millisecond) + time.Millisecond
}
