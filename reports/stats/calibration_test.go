package stats

import (
	"math"
	"testing"
)

// TestIdealRTT checks the ideal RTT against values worked out by hand at
// 50 Mbit/s (160 ns a byte), MTU 1500 (1460 B of payload a packet) and 78 B
// of headers and framing a packet, with a 256 µs base for 100 B requests
// with 100 B responses over 2 links:
//   - 100 B takes (178 + 178) x 160 = 56,960 ns over 2 links;
//   - 1 MB is 685 packets, 1,053,430 B on a link, its first packet 1,538 B:
//     (1,053,430 + 1,538) x 160 = 168,794,880 ns over 2 links;
//   - over 4 links 100 B takes (178 + 3 x 178) x 160 = 113,920 ns.
func TestIdealRTT(t *testing.T) {
	id := &idealRTT{baseNs: 256_000, baseReq: 100, baseResp: 100, baseLinks: 2, rateBps: 50e6, mtu: 1500, overhead: 38}
	tests := []struct {
		name      string
		req, resp int64
		links     int
		want      float64
	}{
		{"the base itself", 100, 100, 2, 256_000},
		{"unknown path is the base's", 100, 100, 0, 256_000},
		{"1 MB request, 100 B response", 1_000_000, 100, 2, 256_000 + 168_794_880 - 56_960},
		{"100 B request, 1 MB response", 100, 1_000_000, 2, 256_000 + 168_794_880 - 56_960},
		{"across a spine", 100, 100, 4, 256_000 + 2*113_920 - 2*56_960},
		{"empty messages are one packet each", 0, 0, 2, 256_000 - 2*(100*2*160)},
	}
	for _, tc := range tests {
		if got := id.at(tc.req, tc.resp, tc.links); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s: ideal %.0f ns, want %.0f", tc.name, got, tc.want)
		}
	}
	// Uplinks at 4x the hosts' rate: the two spine hops of a 100 B
	// message take a quarter of their time (178 B x 160 / 4 each).
	id.uplinkBps = 200e6
	if got, want := id.at(100, 100, 4), 256_000+2*(2*178*160/4.0); math.Abs(got-want) > 1e-6 {
		t.Errorf("across a spine at 4x: ideal %.0f ns, want %.0f", got, want)
	}
	// summary.json's Ideal gives the same ideal, one-way and with a
	// latency per hop too.
	id.hopNs, id.oneWay = 250, true
	sum := &Ideal{BaseRTTus: 256, BaseRequest: 100, BaseResponse: 100, BaseLinks: 2, LinkBps: 50e6, UplinkBps: 200e6,
		MTU: 1500, FrameOverhead: 38, HeaderBytes: headerBytes, HopNs: &id.hopNs, OneWay: true}
	for _, links := range []int{2, 4} {
		if got, want := sum.Us(200, 0, links), id.at(200, 0, links)/1e3; math.Abs(got-want) > 1e-9 {
			t.Errorf("Ideal.Us(200, 0, %d) = %v µs, want %v", links, got, want)
		}
	}
	sum.HopNs = nil
	if got := sum.Us(200, 0, 2); !math.IsNaN(got) {
		t.Errorf("Ideal.Us of a summary without hop_ns = %v, want NaN", got)
	}
}

func TestOwnBaselineLinear(t *testing.T) {
	b := &ownBaseline{lengths: []int64{100, 1000, 10000}, rtts: []float64{1000, 2000, 11000}}
	for _, tc := range []struct {
		length int64
		want   float64
	}{{50, 1000}, {100, 1000}, {550, 1500}, {5500, 6500}, {20000, 21000}} {
		if got := b.At(tc.length); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("at(%d) = %g, want %g", tc.length, got, tc.want)
		}
	}
}
