package capture

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
	"github.com/homatb/homatb/wire/dissector"
)

func TestPoints(t *testing.T) {
	n, err := topo.Layout(scenario.Topology{Kind: scenario.KindStar, Hosts: 3}, "hb00037")
	if err != nil {
		t.Fatal(err)
	}
	ns := Namespaces(map[string]struct{ PID int }{"h1": {PID: 11}, "h2": {PID: 12}, "h3": {}})
	got, err := Points(&scenario.Capture{Hosts: []string{"h2"}, SwitchPorts: []string{"h1"}}, n, ns)
	if err != nil {
		t.Fatal(err)
	}
	h1, h2, h3 := n.Hosts[0], n.Hosts[1], n.Hosts[2]
	want := []Point{
		{Name: "h2", Where: "host h2", In: "h2 in (" + h2.Intf + ")", Out: "h2 out (" + h2.Intf + ")",
			Taps: []Tap{{NetNS: "/proc/12/ns/net", Intf: h2.Intf, Received: 0, Sent: 1}}},
		{Name: "s1-h1", Where: "switch s1 port 1 (to h1)", In: "s1 port 1 in, from h1 (" + h1.SwitchIntf + ")", Out: "s1 port 1 out, to h1 (read at " + h1.Intf + ")",
			Taps: []Tap{{Intf: h1.SwitchIntf, Received: 0, Sent: -1}, {NetNS: "/proc/11/ns/net", Intf: h1.Intf, Received: 1, Sent: -1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("points\n%+v\nwant\n%+v", got, want)
	}
	if _, err := Points(&scenario.Capture{SwitchPorts: []string{"h3"}}, n, ns); err == nil || !strings.Contains(err.Error(), "h3") {
		t.Errorf("a port toward a host without a known namespace: %v", err)
	}
	_ = h3
	if _, err := Points(&scenario.Capture{Hosts: []string{"h3"}}, n, ns); err == nil {
		t.Error("a host without a known namespace was accepted")
	}
	if Begin(t.TempDir(), "other", &scenario.Capture{Hosts: []string{"h1"}, Experiments: []string{"x-*"}}, n, ns) != nil {
		t.Error("an experiment the block does not name got a session")
	}
	var none *Session
	if none.Stop() != nil || none.Warnings() != nil {
		t.Error("a nil session returned something")
	}
}

// netns makes a network namespace for the test with its loopback up, or
// skips when the test cannot.
func netns(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes a network namespace and opens AF_PACKET sockets")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
	name := fmt.Sprintf("hbcap%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	return name
}

// loopback captures ns's loopback: each frame once sent (interface 1)
// and once received (0).
func loopback(ns string) Point {
	return Point{Name: "lo", Where: "test loopback", In: "lo in", Out: "lo out",
		Taps: []Tap{{NetNS: "/run/netns/" + ns, Intf: "lo", Received: 0, Sent: 1}}}
}

// ping sends n echo requests of size bytes to 127.0.0.1 inside ns.
func ping(t *testing.T, ns string, n, size int) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-q", "-c", fmt.Sprint(n), "-i", "0.01", "-s", fmt.Sprint(size), "127.0.0.1").CombinedOutput()
	if err != nil {
		t.Fatalf("ping: %v: %s", err, out)
	}
}

// readCapture reads a pcapng file's frames.
func readCapture(t *testing.T, path string) (frames, caplens, lens, intfs []int, times []time.Time) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, len(data))
		caplens = append(caplens, ci.CaptureLength)
		lens = append(lens, ci.Length)
		intfs = append(intfs, ci.InterfaceIndex)
		times = append(times, ci.Timestamp)
	}
}

// TestCaptureInNamespace captures a namespace's loopback while ping runs
// in it: every frame is in the file, cut to the snaplen with its length
// kept, the record counts them, and the dissector is beside the file.
func TestCaptureInNamespace(t *testing.T) {
	ns := netns(t)
	dir := t.TempDir()
	s := NewSession(Options{RunDir: dir, Experiment: "exp", Snaplen: 64, MaxBytes: 1 << 20})
	s.Start([]Point{loopback(ns)})
	ping(t, ns, 5, 200)
	recs := s.Stop()
	if len(recs) != 1 || recs[0].Error != "" || len(s.Warnings()) != 0 {
		t.Fatalf("records %+v, warnings %v", recs, s.Warnings())
	}
	rec := recs[0]
	if rec.File != "captures/exp/lo.pcapng" || rec.Snaplen != 64 || rec.Point != "test loopback" || rec.Interface != "lo" {
		t.Errorf("record %+v", rec)
	}
	path := filepath.Join(dir, rec.File)
	frames, caplens, lens, intfs, _ := readCapture(t, path)
	// Five requests and five replies, each seen leaving and entering lo.
	if len(frames) < 20 || uint64(len(frames)) != rec.Packets {
		t.Errorf("%d frames in the file, record says %d; want at least 20", len(frames), rec.Packets)
	}
	perIntf := map[int]int{}
	for _, i := range intfs {
		perIntf[i]++
	}
	if perIntf[0] != perIntf[1] || perIntf[0]+perIntf[1] != len(frames) {
		t.Errorf("frames per interface %v: want each frame once sent, once received", perIntf)
	}
	for i := range frames {
		if caplens[i] != 64 || frames[i] != 64 || lens[i] != 14+20+8+200 {
			t.Errorf("frame %d: %d bytes captured of %d, want 64 of %d", i, caplens[i], lens[i], 14+20+8+200)
			break
		}
	}
	if st, err := os.Stat(path); err != nil || st.Size() != rec.Bytes {
		t.Errorf("file %v bytes, record says %d (%v)", st.Size(), rec.Bytes, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, rundir.CapturesDir, rundir.DissectorFile)); err != nil || string(b) != string(dissector.Lua) {
		t.Errorf("no dissector beside the captures: %v", err)
	}
	if again := s.Stop(); len(again) != 1 || again[0] != rec {
		t.Errorf("second Stop: %+v", again)
	}
}

// TestCaptureBounded checks that a file never grows past its bound: the
// frames beyond it are counted and named in a warning.
func TestCaptureBounded(t *testing.T) {
	ns := netns(t)
	dir := t.TempDir()
	const max = 2000
	s := NewSession(Options{RunDir: dir, Experiment: "exp", Snaplen: 128, MaxBytes: max})
	s.Start([]Point{loopback(ns)})
	ping(t, ns, 20, 500)
	recs := s.Stop()
	rec := recs[0]
	st, err := os.Stat(filepath.Join(dir, rec.File))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > max || rec.Bytes != st.Size() {
		t.Errorf("file %d bytes (record %d), bound %d", st.Size(), rec.Bytes, max)
	}
	frames, _, _, _, _ := readCapture(t, filepath.Join(dir, rec.File))
	if rec.LeftOut == 0 || uint64(len(frames)) != rec.Packets || rec.Packets+rec.LeftOut < 80 {
		t.Errorf("record %+v with %d frames in the file: want frames left out, 80 in all", rec, len(frames))
	}
	if w := strings.Join(s.Warnings(), "\n"); !strings.Contains(w, "frames left out") {
		t.Errorf("warnings %q", w)
	}
}

// TestCaptureBadInterface records why a capture could not start.
func TestCaptureBadInterface(t *testing.T) {
	ns := netns(t)
	s := NewSession(Options{RunDir: t.TempDir(), Experiment: "exp", Snaplen: 128, MaxBytes: 1 << 20})
	s.Start([]Point{{Name: "x", Where: "nowhere", Taps: []Tap{{NetNS: "/run/netns/" + ns, Intf: "lo"}, {NetNS: "/run/netns/" + ns, Intf: "nosuch0"}}}})
	recs := s.Stop()
	if len(recs) != 1 || !strings.Contains(recs[0].Error, "nosuch0") || len(s.Warnings()) != 1 {
		t.Errorf("records %+v, warnings %v", recs, s.Warnings())
	}
}

// TestCaptureMergesInTimeOrder reads one point with two sockets, one for
// each direction, as a switch port is read: the file holds both
// directions, in time order.
func TestCaptureMergesInTimeOrder(t *testing.T) {
	ns := netns(t)
	dir := t.TempDir()
	s := NewSession(Options{RunDir: dir, Experiment: "exp", Snaplen: 128, MaxBytes: 1 << 20})
	s.Start([]Point{{Name: "two", Where: "two sockets", In: "in", Out: "out", Taps: []Tap{
		{NetNS: "/run/netns/" + ns, Intf: "lo", Received: 0, Sent: -1},
		{NetNS: "/run/netns/" + ns, Intf: "lo", Received: -1, Sent: 1},
	}}})
	ping(t, ns, 30, 100)
	rec := s.Stop()[0]
	if rec.Interface != "lo,lo" {
		t.Errorf("interfaces %q", rec.Interface)
	}
	_, _, _, intfs, times := readCapture(t, filepath.Join(dir, rec.File))
	per := map[int]int{}
	for i, ts := range times {
		per[intfs[i]]++
		if i > 0 && ts.Before(times[i-1]) {
			t.Fatalf("frame %d at %v, before frame %d at %v", i+1, ts, i, times[i-1])
		}
	}
	if per[0] < 60 || per[0] != per[1] {
		t.Errorf("frames per direction %v, want at least 60 each way", per)
	}
}
