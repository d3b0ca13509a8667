package switchtest

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/dataplane"
)

// TestPingAndUDPFlow: with only P4Runtime entries (no static ARP on the
// hosts), ping works both ways and a UDP flow arrives whole and in order,
// and the P4Runtime counters saw it.
func TestPingAndUDPFlow(t *testing.T) {
	hs := newHosts(t)
	r := newRack(t, hs, nil)

	// Before any entry the switch forwards nothing.
	if err := exec.Command("ip", "netns", "exec", hs[0].netns, "ping", "-c", "1", "-W", "1", hs[1].ip.String()).Run(); err == nil {
		t.Fatal("ping crossed an unprogrammed switch")
	}
	r.program(t)
	for i, h := range hs {
		out, err := exec.Command("ip", "netns", "exec", h.netns, "ping", "-c", "5", "-i", "0.2", "-W", "2", hs[1-i].ip.String()).CombinedOutput()
		if err != nil {
			t.Fatalf("ping %s -> %s: %v\n%s", h.netns, hs[1-i].ip, err, out)
		}
	}

	src, dst := udp(t, hs[0], 7300, 0), udp(t, hs[1], 7301, 0)
	egress0, _ := r.counter(t, p4.CounterEgressQueue, hs[1].port, 0)
	const n = 500
	to := &net.UDPAddr{IP: hs[1].ip, Port: 7301}
	recv := make(chan error, 1)
	go func() {
		buf := make([]byte, 2048)
		for i := range n {
			dst.SetReadDeadline(time.Now().Add(2 * time.Second))
			k, _, err := dst.ReadFromUDP(buf)
			if err != nil {
				recv <- fmt.Errorf("datagram %d: %w", i, err)
				return
			}
			if got := binary.BigEndian.Uint32(buf[:k]); got != uint32(i) {
				recv <- fmt.Errorf("datagram %d arrived as number %d", i, got)
				return
			}
		}
		recv <- nil
	}()
	msg := make([]byte, 1000)
	for i := range n {
		binary.BigEndian.PutUint32(msg, uint32(i))
		if _, err := src.WriteToUDP(msg, to); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			time.Sleep(time.Millisecond) // stay well below the receive buffers
		}
	}
	if err := <-recv; err != nil {
		t.Fatal(err)
	}
	egress1, bytes1 := r.counter(t, p4.CounterEgressQueue, hs[1].port, 0)
	if got := egress1 - egress0; got < n {
		t.Errorf("egress counter of port %d queue 0 grew by %d, want at least the %d datagrams", hs[1].port, got, n)
	}
	if bytes1 < n*(1000+42) {
		t.Errorf("egress bytes %d, want at least %d", bytes1, n*(1000+42))
	}
}

// TestPriorityUnderOverload shapes port 2 to 20 Mbit/s with 32-packet
// queues and floods it from host A with queue-0 traffic at twice that rate,
// while CS7-marked probes (queue 7 by the DSCP table) cross it. Queue 7's
// one-way delay stays within a few frame times, queue 0's grows to its
// buffer limit, what host B lost equals the switch's drop counters read
// over P4Runtime, and the ECT(0) bulk traffic is CE-marked once queue 0
// holds more than the ecn_config threshold.
func TestPriorityUnderOverload(t *testing.T) {
	hs := newHosts(t)
	const rate = 20e6
	const depth = 32
	r := newRack(t, hs, func(c *dataplane.Config) {
		c.Unshaped = false
		c.PortRateBps = map[uint16]uint64{hs[0].port: 1e9, hs[1].port: rate}
		c.QueueDepthPkts = depth
	})
	r.program(t)
	const ecnThreshold = 16
	r.setECNThreshold(t, hs[1].port, ecnThreshold)
	bulk := udp(t, hs[0], 7400, 0x02)  // DSCP 0, ECT(0)
	probe := udp(t, hs[0], 7401, 7<<5) // TOS 0xe0: DSCP 56 = CS7, not ECT
	sink := udp(t, hs[1], 7402, 0)
	if err := recvTOS(sink); err != nil {
		t.Fatal(err)
	}
	to := &net.UDPAddr{IP: hs[1].ip, Port: 7402}

	// Resolve the ARP entry before the flood so no datagram waits for it.
	if _, err := bulk.WriteToUDP([]byte("warm-up-ping-0000"), to); err != nil {
		t.Fatal(err)
	}
	sink.SetReadDeadline(time.Now().Add(2 * time.Second))
	warm := make([]byte, 64)
	if _, _, err := sink.ReadFromUDP(warm); err != nil {
		t.Fatalf("warm-up datagram: %v", err)
	}
	in0, _ := r.counter(t, p4.CounterIngressQueue, hs[1].port, 0)
	out0, _ := r.counter(t, p4.CounterEgressQueue, hs[1].port, 0)

	type arrival struct {
		probe   bool
		ce      bool
		delayUs float64
	}
	arrivals := make(chan arrival, 1<<15)
	go func() {
		defer close(arrivals)
		buf, oob := make([]byte, 2048), make([]byte, 128)
		for {
			sink.SetReadDeadline(time.Now().Add(400 * time.Millisecond))
			k, oobn, _, from, err := sink.ReadMsgUDP(buf, oob)
			if err != nil {
				return
			}
			if k >= 8 {
				sent := int64(binary.BigEndian.Uint64(buf[:8]))
				tos, _ := tosOf(oob[:oobn])
				arrivals <- arrival{probe: from.Port == 7401, ce: tos&3 == 3, delayUs: float64(time.Now().UnixNano()-sent) / 1e3}
			}
		}
	}()

	const payload = 1400                               // 1442-byte frames
	frameUs := float64(payload+42+24) * 8 / rate * 1e6 // + preamble, IFG, FCS
	stamp := func(b []byte) []byte {
		binary.BigEndian.PutUint64(b, uint64(time.Now().UnixNano()))
		return b
	}
	bulkBuf, probeBuf := make([]byte, payload), make([]byte, 64)
	perTick := int(math.Round(2 * rate / 8 / float64(payload+42) * 0.002)) // twice the port rate, 2 ms ticks
	var bulkSent, probesSent int
	start := time.Now()
	for tick := range 300 { // 600 ms
		for range perTick {
			if _, err := bulk.WriteToUDP(stamp(bulkBuf), to); err != nil {
				t.Fatal(err)
			}
			bulkSent++
		}
		if tick >= 40 && tick%4 == 0 { // queue 0 is full by now
			if _, err := probe.WriteToUDP(stamp(probeBuf), to); err != nil {
				t.Fatal(err)
			}
			probesSent++
		}
		time.Sleep(time.Until(start.Add(time.Duration(tick+1) * 2 * time.Millisecond)))
	}
	var probeUs, bulkUs []float64
	var probeCE, bulkCE int
	for a := range arrivals {
		if a.probe {
			probeUs = append(probeUs, a.delayUs)
			probeCE += btoi(a.ce)
		} else {
			bulkUs = append(bulkUs, a.delayUs)
			bulkCE += btoi(a.ce)
		}
	}
	if len(probeUs) != probesSent || len(bulkUs) == 0 {
		t.Fatalf("%d of %d probes and %d of %d bulk datagrams arrived", len(probeUs), probesSent, len(bulkUs), bulkSent)
	}
	slices.Sort(probeUs)
	slices.Sort(bulkUs)
	median := func(v []float64) float64 { return v[len(v)/2] }
	t.Logf("frame %.0f µs; queue 7 one-way p50 %.0f µs max %.0f µs; queue 0 p50 %.0f µs (%d-packet limit = %.0f µs); bulk %d sent, %d received",
		frameUs, median(probeUs), probeUs[len(probeUs)-1], median(bulkUs), depth, depth*frameUs, bulkSent, len(bulkUs))
	// A probe waits for the frame being serialised and the wake-up of the
	// port goroutine; 4 frame times leaves room for the latter.
	if median(probeUs) > 4*frameUs {
		t.Errorf("queue 7 p50 one-way delay %.0f µs, more than 4 frame times (%.0f µs)", median(probeUs), 4*frameUs)
	}
	if median(bulkUs) < 0.7*depth*frameUs {
		t.Errorf("queue 0 p50 one-way delay %.0f µs, want near its %d-packet limit (%.0f µs)", median(bulkUs), depth, depth*frameUs)
	}

	// The queue stays near its 32-packet limit, above the threshold of 16,
	// for all but the first few dozen frames; probes are not ECN-capable.
	t.Logf("CE-marked: %d of %d bulk, %d of %d probes", bulkCE, len(bulkUs), probeCE, len(probeUs))
	if probeCE != 0 {
		t.Errorf("%d not-ECT probes carry CE", probeCE)
	}
	if bulkCE < len(bulkUs)*9/10 {
		t.Errorf("%d of %d bulk datagrams CE-marked, want at least 90%%", bulkCE, len(bulkUs))
	}

	// Drops as the P4 program sees them: offered to the traffic manager
	// minus sent from it (the queue has drained: the receiver waited 400 ms).
	in1, _ := r.counter(t, p4.CounterIngressQueue, hs[1].port, 0)
	out1, _ := r.counter(t, p4.CounterEgressQueue, hs[1].port, 0)
	tmDrops := (in1 - in0) - (out1 - out0)
	st := r.dp.Stats()
	var kernel, txErr, fault uint64
	for _, p := range st.Ports {
		kernel += p.KernelDrops
		txErr += p.TxErrors
		fault += p.FaultDrops
	}
	lost := int64(bulkSent - len(bulkUs))
	t.Logf("lost %d; P4Runtime counters: offered %d sent %d => TM drops %d; kernel %d, tx errors %d, faults %d",
		lost, in1-in0, out1-out0, tmDrops, kernel, txErr, fault)
	if tmDrops == 0 {
		t.Error("no tail drops: the port was not overloaded")
	}
	if got := tmDrops + int64(kernel+txErr+fault); got != lost {
		t.Errorf("host B lost %d datagrams, the switch counted %d (TM %d, kernel %d, tx %d, faults %d)", lost, got, tmDrops, kernel, txErr, fault)
	}
	if in1-in0 != int64(bulkSent)-int64(kernel) {
		t.Errorf("ingress counter saw %d, host A sent %d with %d lost in the switch's socket", in1-in0, bulkSent, kernel)
	}
	for _, q := range st.Ports[1].Queues {
		if q.Queue == 0 && int64(q.DropPkts) < tmDrops {
			t.Errorf("dataplane counted %d tail drops on queue 0, the P4 counters %d", q.DropPkts, tmDrops)
		}
		// The switch counts the CE marks it made; the receiver saw bulkCE
		// of them on queue 0 and none on queue 7.
		if q.Queue == 0 && q.CEMarkedPkts < uint64(bulkCE) {
			t.Errorf("switch counted %d CE marks on queue 0, the receiver saw %d", q.CEMarkedPkts, bulkCE)
		}
		if q.Queue == 7 && q.CEMarkedPkts != 0 {
			t.Errorf("switch counted %d CE marks on the probes' queue 7", q.CEMarkedPkts)
		}
	}
	peak := r.register(t, p4.RegisterQueuePeak, hs[1].port, 0)
	if peak < depth-1 || peak > depth {
		t.Errorf("queue_peak register %d, want the %d-packet limit", peak, depth)
	}
	if peak7 := r.register(t, p4.RegisterQueuePeak, hs[1].port, 7); peak7 > 2 {
		t.Errorf("queue 7 peak depth %d, want it nearly empty", peak7)
	}
}
