package dissector

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
	"github.com/homatb/homatb/wire"
)

// captured is one frame a downlink of the in-memory network delivered.
type captured struct {
	ts time.Time
	b  []byte
}

// captureRun runs echo RPCs of mixed sizes from three clients to one
// server on the engine's in-memory network (homatest, the switch's own
// port model) with transport cfg and returns every frame the switch's
// ports toward the hosts sent.
func captureRun(t *testing.T, lc homatest.LinkConfig, cfg homaconf.Config) []captured {
	var (
		mu     sync.Mutex
		frames []captured
	)
	synctest.Test(t, func(t *testing.T) {
		lc.Tap = func(f []byte) {
			mu.Lock()
			frames = append(frames, captured{time.Now(), append([]byte(nil), f...)})
			mu.Unlock()
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		network := homatest.NewNetwork(lc)
		defer network.Close()
		attach := func(a netip.Addr) *homa.Endpoint {
			c, err := network.NewConn(a)
			if err != nil {
				t.Fatal(err)
			}
			e, err := homa.NewEndpoint(c, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			return e
		}
		server := netip.AddrFrom4([4]byte{10, 0, 0, 1})
		srv, err := attach(server).Listen(99)
		if err != nil {
			t.Fatal(err)
		}
		homatest.ServeEcho(ctx, t, srv)
		sizes := []int{100, 1500, 7000, 30_000, 60_000}
		var wg sync.WaitGroup
		for c := range 3 {
			ep := attach(netip.AddrFrom4([4]byte{10, 0, 1, byte(c + 1)}))
			for g := range 2 {
				wg.Go(func() {
					for i := g; i < 8; i += 2 {
						req := make([]byte, sizes[(i+c)%len(sizes)])
						homatest.Fill(req, uint64(c<<16|i))
						if resp, _, err := ep.Call(ctx, netip.AddrPortFrom(server, 99), req); err != nil || string(resp) != string(req) {
							t.Errorf("client %d call %d: %v", c, i, err)
						}
					}
				})
			}
		}
		wg.Wait()
	})
	return frames
}

// writeFrames writes frames to a pcapng file at path, each cut to snaplen
// bytes as a scenario's capture keeps them.
func writeFrames(t *testing.T, path string, frames []captured, snaplen int) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcapgo.NewNgWriterInterface(out, pcapgo.NgInterface{Name: "homatest", LinkType: layers.LinkTypeEthernet, SnapLength: uint32(snaplen)}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		n := min(len(f.b), snaplen)
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: f.ts, CaptureLength: n, Length: len(f.b)}, f.b[:n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEngineTransports captures each transport built on the engine (Homa,
// Homa with START_MSG, pFabric on rank-ordered ports, pHost, NDP on
// trimming ports; with 1% loss so RESENDs and retransmissions happen) at
// a scenario capture's snaplen, runs tshark with the dissector over the
// capture, and checks that every packet is decoded with no malformed or
// invalid expert info, that each header field equals what package wire
// decodes from the frame, and that the packet types the transport is
// known for are there. With HOMATB_DISSECTOR_CAPTURES=DIR the captures
// are kept in DIR (docs/dissector.md's example comes from one).
func TestEngineTransports(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		tshark(t, os.DevNull) // skips, with the reason
	}
	const snaplen = 128
	lossy := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Loss: 0.01, Seed: 37}
	ranked := lossy
	ranked.RankOrder, ranked.QueueBytes = true, 30_000
	trim := lossy
	trim.TrimAbovePackets = 8
	for _, tt := range []struct {
		name string
		lc   homatest.LinkConfig
		cfg  homaconf.Config
		want []wire.Type
	}{
		{"homa", lossy, homaconf.Config{}, []wire.Type{wire.TypeData, wire.TypeGrant, wire.TypeResend, wire.TypeCutoffs}},
		{"homa-start_msg", lossy, homaconf.Config{StartMsg: true}, []wire.Type{wire.TypeData, wire.TypeGrant, wire.TypeStartMsg}},
		{"pfabric", ranked, homaconf.Config{Variant: homaconf.VariantPFabric}, []wire.Type{wire.TypeData}},
		{"phost", lossy, homaconf.Config{Variant: homaconf.VariantPHost}, []wire.Type{wire.TypeData, wire.TypeGrant}},
		{"ndp", trim, homaconf.Config{Variant: homaconf.VariantNDP}, []wire.Type{wire.TypeData, wire.TypePull, wire.TypeNack}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			frames := captureRun(t, tt.lc, tt.cfg)
			dir := os.Getenv("HOMATB_DISSECTOR_CAPTURES")
			if dir == "" {
				dir = t.TempDir()
			}
			path := filepath.Join(dir, tt.name+".pcapng")
			writeFrames(t, path, frames, snaplen)
			pkts := homatbFields(t, path)
			if len(pkts) != len(frames) {
				t.Fatalf("tshark shows %d packets, the capture has %d", len(pkts), len(frames))
			}
			types := map[wire.Type]int{}
			var ranks, trimmed int
			for i, f := range frames {
				b := f.b[frameHdr:]
				msg, werr := parse(b)
				if werr != nil {
					t.Fatalf("frame %d: wire refuses a packet the engine sent: %v", i+1, werr)
				}
				cm, _ := wire.ParseCommon(b)
				types[cm.Type]++
				if cm.Rank != 0 {
					ranks++
				}
				if cm.Trimmed() {
					trimmed++
				}
				vals := flatten(msg)
				occ := map[string]int{}
				for _, fl := range pkts[i] {
					n := occ[fl.Name]
					occ[fl.Name]++
					if isExpert(fl.Name) && fl.Name != "homatb.trimmed.note" && fl.Name != "homatb.retransmit.note" {
						t.Errorf("frame %d (%v): expert info %s", i+1, cm.Type, fl.Name)
					}
					if p, ok := goPath[fl.Name]; ok {
						if strings.Contains(p, "%d") {
							p = fmt.Sprintf(p, n)
						}
						checkWireField(t, tcase{name: fmt.Sprint("frame ", i+1), b: b, noMutate: true}, msg, nil, vals, fl, p, ftName(fl.Size))
					}
				}
				if occ["homatb.type"] != 1 || occ["homatb.rpc_id"] != 1 {
					t.Errorf("frame %d: type shown %d times, rpc_id %d times", i+1, occ["homatb.type"], occ["homatb.rpc_id"])
				}
			}
			for _, ty := range tt.want {
				if types[ty] == 0 {
					t.Errorf("no %v packet in the capture (types %v)", ty, types)
				}
			}
			if tt.cfg.Variant == homaconf.VariantPFabric && ranks == 0 {
				t.Error("no ranked DATA packet")
			}
			if tt.lc.TrimAbovePackets > 0 && trimmed == 0 {
				t.Error("no trimmed DATA packet")
			}
			keys := make([]string, 0, len(types))
			for ty, n := range types {
				keys = append(keys, fmt.Sprintf("%v:%d", ty, n))
			}
			slices.Sort(keys)
			t.Logf("%d frames, %d ranked, %d trimmed: %s", len(frames), ranks, trimmed, strings.Join(keys, " "))
		})
	}
}

// ftName is the registered type of an unsigned field of size n.
func ftName(n int) string {
	for k, v := range ftSize {
		if v == n {
			return k
		}
	}
	return ""
}
