package tcpmodel

// BIC's constants: Linux tcp_bic's module defaults (Xu, Harfoush and
// Rhee, INFOCOM 2004, as the kernel parameterises it).
const (
	bicB             = 4   // the binary search goes to (max+min)/B
	bicMaxIncrement  = 16  // the most segments a window grows by per RTT
	bicLowWindow     = 14  // at or below it BIC is Reno
	bicBeta          = 819 // the window after a loss, over bicBetaScale
	bicBetaScale     = 1024
	bicSmoothPart    = 20 // RTTs from Wmax-B to Wmax
	bicStartupCntMax = 20 // before the first loss: at least 5% per RTT
)

// bicState is a BIC sender's memory: the window at the last loss before
// fast convergence (the search's target, Wmax) and the window at the last
// loss (0: none yet).
type bicState struct {
	lastMax, lossCwnd int
}

// bicCount is how many segments BIC needs acknowledged to grow a window
// of cwnd by one segment in congestion avoidance: Reno's cwnd at or below
// the low window; below Wmax a binary search toward it (the distance over
// B per RTT, at most max_increment, at least 1/smooth_part near it);
// above it max probing, slow at first, then at most max_increment per RTT;
// before any loss no slower than 5% per RTT.
func bicCount(cwnd int, s bicState) int {
	if cwnd <= bicLowWindow {
		return cwnd
	}
	var cnt int
	switch {
	case cwnd < s.lastMax:
		switch dist := (s.lastMax - cwnd) / bicB; {
		case dist > bicMaxIncrement:
			cnt = cwnd / bicMaxIncrement
		case dist <= 1:
			cnt = cwnd * bicSmoothPart / bicB
		default:
			cnt = cwnd / dist
		}
	case cwnd < s.lastMax+bicB:
		cnt = cwnd * bicSmoothPart / bicB
	case cwnd < s.lastMax+bicMaxIncrement*(bicB-1):
		cnt = cwnd * (bicB - 1) / (cwnd - s.lastMax)
	default:
		cnt = cwnd / bicMaxIncrement
	}
	if s.lossCwnd == 0 {
		cnt = min(cnt, bicStartupCntMax)
	}
	return max(cnt, 1)
}

// bicLoss is BIC's response to a loss at window cwnd: the new threshold,
// and Wmax set to cwnd, or (fast convergence) below it when the window
// had not regained the last Wmax, so a flow giving way gives more.
func bicLoss(cwnd int, s *bicState) int {
	if cwnd < s.lastMax {
		s.lastMax = cwnd * (bicBetaScale + bicBeta) / (2 * bicBetaScale)
	} else {
		s.lastMax = cwnd
	}
	s.lossCwnd = cwnd
	if cwnd <= bicLowWindow {
		return max(cwnd/2, 2)
	}
	return max(cwnd*bicBeta/bicBetaScale, 2)
}

// NV's constants: Linux tcp_nv's documented module defaults (Brakmo,
// TCP-NV).
const (
	nvPad              = 10  // queued segments a flow may keep in the network
	nvPadBuffer        = 2   // no growth this close to the pad
	nvMinCwnd          = 2   // no congestion decrease below this
	nvCongDecMult      = 38  // decrease by 30% (38/128) of the excess
	nvLossDec          = 819 // the window after a loss, over 1024
	nvDecEvalMinCalls  = 60  // RTT samples before a decrease
	nvIncEvalMinCalls  = 20  // RTT samples before allowing growth
	nvSSEvalMinCalls   = 30  // RTT samples before leaving slow start
	nvStopRTTCnt       = 10  // RTTs of growth after a no-congestion decision
	nvRTTMinCnt        = 2   // RTTs before a congestion decision
	nvGrowthRateNeg    = 8   // no-congestion decisions to double slow growth
	nvGrowthFactorMin  = -8  // the slowest growth: cwnd << 8 ACKs a segment
	nvInfiniteSSThresh = 1 << 30
)

// nvState is an NV sender's measurement and decisions: the RTT smoothed
// over the last two samples and the smallest seen, the highest rate
// (bytes in flight over the smoothed RTT, bytes/ns) in the round so far,
// where the round ends, the RTT samples and rounds since the last
// decision, whether the window may grow, and how fast (growth below 0:
// slower than a segment per RTT, after timeouts).
type nvState struct {
	lastRTT, minRTT int64
	maxRate         float64
	roundEnd        uint64
	calls, rounds   int
	noCong          int
	growth          int
	blocked         bool // growth stopped by a congestion decision or loss
	reset           bool // recovery or loss: start over when open again
}

// nvCount is how many segments NV needs acknowledged to grow the window
// by one in congestion avoidance: Reno's cwnd (at least 4), or cwnd
// shifted left by -growth after timeouts slowed it.
func nvCount(cwnd int, s *nvState) int {
	if s.growth < 0 {
		return cwnd << -s.growth
	}
	return max(4, cwnd>>s.growth)
}

// nvSample takes one ACK's RTT sample (ns) with flight bytes in the
// network, at sndUna now acknowledged and sndMax sent; at a round's end it
// compares the window (segments of mss bytes) with what the round's best
// rate needs at the smallest RTT (the window by slope) plus the pad, and
// returns the window, and the threshold, it decides on: smaller when the
// excess shows a queue, unchanged otherwise. ssthresh is the current
// threshold (nvInfiniteSSThresh: still in slow start).
func nvSample(s *nvState, rtt int64, flight, sndUna, sndMax uint64, mss, cwnd, ssthresh int) (int, int) {
	if flight == 0 || rtt <= 0 {
		return cwnd, ssthresh
	}
	avg := rtt
	if s.lastRTT > 0 {
		avg = (rtt + s.lastRTT) / 2
	} else {
		s.minRTT = 2 * rtt
	}
	s.lastRTT = avg
	s.maxRate = max(s.maxRate, float64(flight)/float64(avg))
	s.calls++
	if avg < s.minRTT {
		s.minRTT = avg
	}
	if sndUna <= s.roundEnd {
		return cwnd, ssthresh
	}
	s.roundEnd = sndMax
	s.rounds++
	maxWin := int(s.maxRate*float64(s.minRTT)/float64(mss)) + nvPad
	switch {
	case cwnd > maxWin:
		switch {
		case s.rounds < nvRTTMinCnt:
			return cwnd, ssthresh
		case ssthresh == nvInfiniteSSThresh:
			if s.calls < nvSSEvalMinCalls {
				return cwnd, ssthresh
			}
		case s.calls < nvDecEvalMinCalls:
			if !s.blocked && s.rounds > nvStopRTTCnt {
				s.blocked = true
			}
			return cwnd, ssthresh
		}
		s.blocked = true
		ssthresh = maxWin
		if cwnd-maxWin > 2 {
			cwnd -= max(2, (cwnd-maxWin)*nvCongDecMult/128)
		} else {
			cwnd = maxWin
		}
		s.growth = min(s.growth, 0)
		s.noCong = 0
	case cwnd <= maxWin-nvPadBuffer:
		if s.calls < nvIncEvalMinCalls {
			return cwnd, ssthresh
		}
		s.blocked = false
		s.noCong++
		if s.growth < 0 && s.noCong > nvGrowthRateNeg {
			s.growth++
			s.noCong = 0
		}
	default:
		return cwnd, ssthresh
	}
	s.calls, s.rounds, s.maxRate = 0, 0, 0
	return max(cwnd, nvMinCwnd), ssthresh
}

// nvRestart starts NV's measurement over at sndUna (back in the open state
// after recovery or a timeout).
func (s *nvState) restart(sndUna uint64) {
	s.reset, s.noCong, s.rounds, s.lastRTT, s.maxRate, s.calls = false, 0, 0, 0, 0, 0
	s.roundEnd = sndUna
}

// nvLoss is NV's response to a loss at window cwnd: 80% of it, no growth
// until the sender is open again, and after a timeout slower growth.
func nvLoss(cwnd int, s *nvState, timeout bool) int {
	s.reset, s.blocked = true, true
	if timeout {
		s.growth = max(min(s.growth, 0)-1, nvGrowthFactorMin)
	}
	return max(cwnd*nvLossDec/1024, 2)
}
