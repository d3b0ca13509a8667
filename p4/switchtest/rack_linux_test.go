package switchtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/p4/target"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// host is one namespace behind a switch port.
type host struct {
	netns string // namespace name
	veth  string // switch-side interface in the root namespace
	port  uint16
	ip    net.IP
	mac   net.HardwareAddr
}

// rack is two hosts, the switch between them, and a P4Runtime client that
// is primary for it.
type rack struct {
	hosts  [2]host
	dp     *dataplane.Dataplane
	client p4v1.P4RuntimeClient
	elect  *p4v1.Uint128
}

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newHosts makes namespaces swtA<pid>/swtB<pid> with 10.197.<pid%250>.1 and
// .2 and no static neighbours: the switch's arp_proxy table must answer.
func newHosts(t *testing.T) [2]host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, veths and AF_PACKET sockets")
	}
	for _, tool := range []string{"ip", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	pid := os.Getpid()
	var hs [2]host
	for i, name := range []string{"A", "B"} {
		h := host{
			netns: fmt.Sprintf("swt%s%d", name, pid),
			veth:  fmt.Sprintf("swt%s%d", strings.ToLower(name), pid),
			port:  uint16(i + 1),
			ip:    net.IPv4(10, 197, byte(pid%250), byte(i+1)).To4(),
			mac:   net.HardwareAddr{0x02, 0x5e, byte(pid >> 8), byte(pid), 0, byte(i + 1)},
		}
		sh(t, "ip", "netns", "add", h.netns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", h.netns).Run() })
		inner := h.veth + "n"
		sh(t, "ip", "link", "add", h.veth, "type", "veth", "peer", "name", inner)
		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", h.veth).Run() })
		sh(t, "ip", "link", "set", inner, "netns", h.netns)
		for _, cmd := range [][]string{
			{"link", "set", inner, "name", "eth0"},
			{"link", "set", "eth0", "address", h.mac.String()},
			{"addr", "add", h.ip.String() + "/24", "dev", "eth0"},
			{"link", "set", "eth0", "up"},
			{"link", "set", "lo", "up"},
		} {
			sh(t, append([]string{"ip", "-n", h.netns}, cmd...)...)
		}
		sh(t, "ip", "link", "set", h.veth, "up")
		if _, err := exec.LookPath("ethtool"); err == nil {
			// One frame per packet: no segmentation offloads in the host.
			sh(t, "ip", "netns", "exec", h.netns, "ethtool", "-K", "eth0", "tso", "off", "gso", "off", "gro", "off", "tx", "off")
		}
		hs[i] = h
	}
	return hs
}

// newRack starts the pipeline, its P4Runtime server on a loopback port and
// the dataplane on the hosts' veths, then becomes primary and pushes tor.p4.
func newRack(t *testing.T, hs [2]host, tune func(*dataplane.Config)) *rack {
	t.Helper()
	cfg := dataplane.Config{DeviceID: 1, Ports: map[uint16]string{}, Unshaped: true}
	for _, h := range hs {
		cfg.Ports[h.port] = h.veth
	}
	if tune != nil {
		tune(&cfg)
	}
	sw, err := target.New(target.Config{DeviceID: 1, Addr: "127.0.0.1:0", Dataplane: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	dp := sw.Dataplane()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- sw.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("switch Run: %v", err)
		}
	})

	conn, err := grpc.NewClient(sw.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r := &rack{hosts: hs, dp: dp, client: p4v1.NewP4RuntimeClient(conn), elect: &p4v1.Uint128{Low: 1}}
	r.becomePrimary(t)
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.SetForwardingPipelineConfig(timeout(t), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: 1, ElectionId: r.elect, Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: info}}); err != nil {
		t.Fatalf("push tor.p4: %v", err)
	}
	return r
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// becomePrimary opens the stream channel, keeps it open for the test and
// waits for the "is primary" answer.
func (r *rack) becomePrimary(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := r.client.StreamChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{
		Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: 1, ElectionId: r.elect}}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil || m.GetArbitration().GetStatus().GetCode() != 0 {
		t.Fatalf("arbitration: %v %v", m, err)
	}
}

// program writes what the controller would for this rack: a /32 route and
// an ARP answer per host, and CSp -> queue p.
func (r *rack) program(t *testing.T) {
	t.Helper()
	var ups []*p4v1.Update
	add := func(table uint32, key *p4v1.FieldMatch, act uint32, params ...[]byte) {
		a := &p4v1.Action{ActionId: act}
		for i, v := range params {
			a.Params = append(a.Params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: v})
		}
		ups = append(ups, &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
			TableId: table, Match: []*p4v1.FieldMatch{key},
			Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}},
		}}}})
	}
	exactKey := func(v []byte) *p4v1.FieldMatch {
		return &p4v1.FieldMatch{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
	}
	for _, h := range r.hosts {
		add(p4.TableIPv4LPM, &p4v1.FieldMatch{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: h.ip, PrefixLen: 32}}},
			p4.ActionIPv4Forward, []byte{byte(h.port)}, h.mac)
		add(p4.TableARPProxy, exactKey(h.ip), p4.ActionARPReply, h.mac)
	}
	for q := range byte(8) {
		add(p4.TableDSCPToQueue, exactKey([]byte{q << 3}), p4.ActionSetQueue, []byte{q})
	}
	if _, err := r.client.Write(timeout(t), &p4v1.WriteRequest{DeviceId: 1, ElectionId: r.elect, Updates: ups}); err != nil {
		t.Fatalf("program the rack: %v", err)
	}
}

// counter reads one cell of a tor.p4 counter over P4Runtime.
func (r *rack) counter(t *testing.T, id uint32, port uint16, queue uint8) (pkts, bytes int64) {
	t.Helper()
	e := r.read(t, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
		CounterId: id, Index: &p4v1.Index{Index: int64(p4.QueueIndex(port, queue))}}}})
	d := e.GetCounterEntry().GetData()
	return d.GetPacketCount(), d.GetByteCount()
}

// register reads one cell of a tor.p4 register over P4Runtime.
func (r *rack) register(t *testing.T, id uint32, port uint16, queue uint8) uint64 {
	t.Helper()
	e := r.read(t, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: id, Index: &p4v1.Index{Index: int64(p4.QueueIndex(port, queue))}}}})
	var v uint64
	for _, b := range e.GetRegisterEntry().GetData().GetBitstring() {
		v = v<<8 | uint64(b)
	}
	return v
}

func (r *rack) read(t *testing.T, ent *p4v1.Entity) *p4v1.Entity {
	t.Helper()
	rc, err := r.client.Read(timeout(t), &p4v1.ReadRequest{DeviceId: 1, Entities: []*p4v1.Entity{ent}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rc.Recv()
	if err != nil || len(resp.GetEntities()) != 1 {
		t.Fatalf("read %v: %v, %d entities", ent, err, len(resp.GetEntities()))
	}
	return resp.GetEntities()[0]
}

// udp opens a UDP socket in h's namespace with the given TOS byte.
func udp(t *testing.T, h host, port, tos int) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := ns.WithNetNSPath("/var/run/netns/"+h.netns, func(ns.NetNS) error {
		var err error
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: h.ip, Port: port})
		return err
	})
	if err != nil {
		t.Fatalf("udp socket in %s: %v", h.netns, err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetReadBuffer(8 << 20); err != nil {
		t.Fatal(err)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, tos) }); err != nil || serr != nil {
		t.Fatalf("IP_TOS: %v %v", err, serr)
	}
	return c
}

// setECNThreshold installs ecn_config for port: CE above threshold packets.
func (r *rack) setECNThreshold(t *testing.T, port uint16, threshold uint32) {
	t.Helper()
	a := &p4v1.Action{ActionId: p4.ActionSetECNThreshold, Params: []*p4v1.Action_Param{
		{ParamId: 1, Value: []byte{byte(threshold >> 16), byte(threshold >> 8), byte(threshold)}}}}
	te := &p4v1.TableEntry{TableId: p4.TableECNConfig,
		Match:  []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{byte(port >> 8), byte(port)}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}}
	if _, err := r.client.Write(timeout(t), &p4v1.WriteRequest{DeviceId: 1, ElectionId: r.elect, Updates: []*p4v1.Update{
		{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}}}); err != nil {
		t.Fatalf("ecn_config: %v", err)
	}
}

// recvTOS asks the kernel to report each datagram's TOS byte.
func recvTOS(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1) }); err != nil {
		return err
	}
	return serr
}

// tosOf finds the IP_TOS control message of a received datagram.
func tosOf(oob []byte) (byte, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) > 0 {
			return m.Data[0], true
		}
	}
	return 0, false
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
