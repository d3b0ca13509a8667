package dissector

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/homatb/homatb/wire"
)

// Frame layout of the test captures: Ethernet, IPv4 without options, then
// the Homa packet, as the switch's ports and homatest's links carry them.
const (
	ethLen   = 14
	frameHdr = ethLen + 20
)

// frame wraps a Homa packet of which caplen bytes were captured (0: all),
// or with udpSport set a UET packet in a UDP datagram from that port to
// port 4793.
type frame struct {
	src, dst [4]byte
	tos      byte
	b        []byte
	caplen   int
	ts       time.Time
	udpSport uint16
}

func (f frame) bytes() []byte {
	body := f.b
	proto := byte(wire.IPProto)
	if f.udpSport != 0 {
		proto = 17
		body = binary.BigEndian.AppendUint16(nil, f.udpSport)
		body = binary.BigEndian.AppendUint16(body, wire.UETPort)
		body = binary.BigEndian.AppendUint16(body, uint16(wire.UDPHeaderLen+len(f.b)))
		body = append(append(body, 0, 0), f.b...)
	}
	b := make([]byte, frameHdr+len(body))
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[ethLen:]
	ip[0], ip[1], ip[8], ip[9] = 0x45, f.tos, 64, proto
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(body)))
	copy(ip[12:16], f.src[:])
	copy(ip[16:20], f.dst[:])
	copy(b[frameHdr:], body)
	return b
}

// writeCapture writes frames to a pcapng file (the format of scenario
// captures) in dir.
func writeCapture(t testing.TB, dir string, frames []frame) string {
	t.Helper()
	path := filepath.Join(dir, "test.pcapng")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcapgo.NewNgWriter(out, layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		b := f.bytes()
		n := len(b)
		if f.caplen > 0 {
			n = frameHdr + f.caplen
		}
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: f.ts, CaptureLength: n, Length: len(b)}, b[:n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// tshark runs tshark with the embedded dissector over capture and returns
// its standard output. It skips the test when tshark is not installed.
// The user's own Wireshark folders are hidden (HOME points into the test's
// directory), so an installed copy of the dissector cannot collide.
func tshark(t testing.TB, capture string, args ...string) []byte {
	t.Helper()
	return runTshark(t, func(lua string) []string {
		return append([]string{"-n", "-X", "lua_script:" + lua, "-r", capture}, args...)
	})
}

// runTshark runs tshark with the arguments args makes of the dissector's path.
func runTshark(t testing.TB, args func(lua string) []string) []byte {
	t.Helper()
	bin, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed (Debian: apt-get install tshark; scripts/install-deps.sh installs it), so the dissector cannot be run")
	}
	dir := t.TempDir()
	lua := filepath.Join(dir, FileName)
	if err := Write(lua); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args(lua)...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, stderr.Bytes())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		// tshark warns when it runs as root; anything else (a Lua error
		// above all) fails the test.
		if line != "" && !strings.HasPrefix(line, "Running as user") {
			t.Fatalf("tshark wrote to stderr:\n%s", stderr.Bytes())
		}
	}
	return stdout.Bytes()
}

// field is one item of tshark's PDML output.
type field struct {
	Name   string  `xml:"name,attr"`
	Show   string  `xml:"show,attr"`
	Value  string  `xml:"value,attr"`
	Pos    int     `xml:"pos,attr"`
	Size   int     `xml:"size,attr"`
	Fields []field `xml:"field"`
}

type pdmlProto struct {
	Name   string      `xml:"name,attr"`
	Fields []field     `xml:"field"`
	Protos []pdmlProto `xml:"proto"`
}

type pdml struct {
	Packets []struct {
		Protos []pdmlProto `xml:"proto"`
	} `xml:"packet"`
}

// homatbFields runs tshark over capture and returns, per packet, the
// fields of the homatb protocol in tree order (subtrees flattened).
func homatbFields(t testing.TB, capture string) [][]field {
	t.Helper()
	var doc pdml
	if err := xml.Unmarshal(tshark(t, capture, "-T", "pdml"), &doc); err != nil {
		t.Fatalf("PDML: %v", err)
	}
	var flat func(fs []field, out []field) []field
	flat = func(fs []field, out []field) []field {
		for _, f := range fs {
			out = append(out, f)
			out = flat(f.Fields, out)
		}
		return out
	}
	var pkts [][]field
	for _, p := range doc.Packets {
		var fs []field
		for _, pr := range p.Protos {
			if pr.Name == "homatb" {
				fs = flat(pr.Fields, fs)
			}
		}
		pkts = append(pkts, fs)
	}
	return pkts
}

// registeredFields lists the dissector's fields as tshark registers them
// (abbreviation -> type), from `tshark -G fields`.
func registeredFields(t testing.TB) map[string]string {
	t.Helper()
	out := runTshark(t, func(lua string) []string { return []string{"-G", "fields", "-X", "lua_script:" + lua} })
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		c := strings.Split(line, "\t")
		if len(c) >= 5 && c[0] == "F" && c[4] == "homatb" {
			got[c[2]] = c[3]
		}
	}
	if len(got) == 0 {
		t.Fatal("tshark lists no homatb field: the dissector did not load")
	}
	return got
}
