package stats

import (
	"cmp"
	"context"
	"slices"

	"github.com/homatb/homatb/rundir"
)

// TCPConn summarises one TCP client connection over an experiment, from the
// agents' TCP_INFO samples (tcp.csv): its congestion window (segments) and
// smoothed RTT (µs), and its retransmissions and CE-marked deliveries.
type TCPConn struct {
	Host        string  `json:"host"`
	Peer        string  `json:"peer"`
	Conn        int     `json:"conn"`
	Samples     int     `json:"samples"`
	MeanCwnd    float64 `json:"mean_cwnd_segs"`
	MaxCwnd     uint64  `json:"max_cwnd_segs"`
	SRTTP50us   uint64  `json:"srtt_p50_us"`
	SRTTP99us   uint64  `json:"srtt_p99_us"`
	Retrans     uint64  `json:"retrans"`
	DeliveredCE uint64  `json:"delivered_ce"`
}

// readTCPConns reads tcp.csv into one summary per connection by
// experiment; a missing file is none.
func readTCPConns(ctx context.Context, dir string) (map[string][]TCPConn, error) {
	type key struct {
		exp, host, peer string
		conn            int
	}
	type acc struct {
		n          int
		cwndSum    float64
		maxCwnd    uint64
		srtt       []uint64
		last       rundir.TCPSample
		firstRetr  uint64
		firstCE    uint64
		firstValid bool
	}
	byKey := map[key]*acc{}
	var order []key
	err := readSeries(ctx, dir, rundir.TCPConns(), func(r *rundir.TCPSample) {
		k := key{r.Experiment, r.Host, r.Peer, r.Conn}
		a := byKey[k]
		if a == nil {
			a = &acc{}
			byKey[k] = a
			order = append(order, k)
		}
		if !a.firstValid {
			a.firstRetr, a.firstCE, a.firstValid = r.Retrans, r.DeliveredCE, true
		}
		a.n++
		a.cwndSum += float64(r.CwndSegs)
		a.maxCwnd = max(a.maxCwnd, r.CwndSegs)
		a.srtt = append(a.srtt, r.SRTTus)
		a.last = *r
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]TCPConn{}
	for _, k := range order {
		a := byKey[k]
		slices.Sort(a.srtt)
		out[k.exp] = append(out[k.exp], TCPConn{Host: k.host, Peer: k.peer, Conn: k.conn, Samples: a.n,
			MeanCwnd: a.cwndSum / float64(a.n), MaxCwnd: a.maxCwnd,
			SRTTP50us: a.srtt[Rank(len(a.srtt), 0.5)-1], SRTTP99us: a.srtt[Rank(len(a.srtt), 0.99)-1],
			Retrans: a.last.Retrans - min(a.firstRetr, a.last.Retrans), DeliveredCE: a.last.DeliveredCE - min(a.firstCE, a.last.DeliveredCE)})
	}
	for exp := range out {
		slices.SortFunc(out[exp], func(a, b TCPConn) int {
			return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Peer, b.Peer), cmp.Compare(a.Conn, b.Conn))
		})
	}
	return out, nil
}
