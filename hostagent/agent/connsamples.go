package agent

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/homatb/homatb/hostagent/tcprpc"
	"github.com/homatb/homatb/rundir"
)

// connLister is a transport that can say what its client connections'
// TCP_INFO reads (kernel TCP).
type connLister interface {
	Conns(buf []tcprpc.ConnInfo) []tcprpc.ConnInfo
}

// Conns lists the TCP client's connections.
func (t *tcpTransport) Conns(buf []tcprpc.ConnInfo) []tcprpc.ConnInfo { return t.client.Conns(buf) }

const (
	// connSampleEvery is how often a TCP client's connections are read.
	connSampleEvery = 100 * time.Millisecond
	// maxConnSamples bounds one experiment's file (20 minutes of 80
	// connections at the default interval).
	maxConnSamples = 1_000_000
)

// connSampler writes a TCP client's connections' congestion windows and
// RTTs to a tcp.csv file of its own while the experiment runs.
type connSampler struct {
	path string
	stop chan struct{}
	done chan error
}

// startConnSampler samples src every connSampleEvery into path until Close.
func startConnSampler(path, experiment, host string, src connLister) (*connSampler, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("tcp samples: %w", err)
	}
	bw := bufio.NewWriter(f)
	w, err := rundir.TCPConns().NewWriter(bw, true)
	if err != nil {
		f.Close()
		return nil, err
	}
	s := &connSampler{path: path, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		tick := time.NewTicker(connSampleEvery)
		defer tick.Stop()
		var buf []tcprpc.ConnInfo
		var werr error
		rows := 0
		row := rundir.TCPSample{Experiment: experiment, Host: host}
		for werr == nil && rows < maxConnSamples {
			select {
			case <-s.stop:
				s.done <- errors.Join(w.Flush(), bw.Flush(), f.Close())
				return
			case now := <-tick.C:
				buf = src.Conns(buf[:0])
				for _, c := range buf {
					row.Peer, row.Conn, row.UnixNs = c.Peer, c.Slot, now.UnixNano()
					row.CwndSegs, row.SRTTus, row.RTTVarUs = uint64(c.CwndSegs), uint64(c.SRTTus), uint64(c.RTTVarUs)
					row.Retrans, row.DeliveredCE = c.Retrans, c.DeliveredCE
					if werr = w.Write(&row); werr != nil {
						break
					}
					rows++
				}
				if werr == nil {
					werr = w.Flush()
				}
			}
		}
		<-s.stop
		s.done <- errors.Join(werr, w.Flush(), bw.Flush(), f.Close())
	}()
	return s, nil
}

// Close stops sampling and closes the file.
func (s *connSampler) Close() error {
	close(s.stop)
	return <-s.done
}
