package simnet

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// headExchange is what one RPC of headRPC did, as the test compares it.
type headExchange struct {
	reqHead, respHead []byte
	reqLen, respLen   int
	rtt               time.Duration
	txBytes           uint64 // both endpoints'
	switchBytes       uint64 // the switch's ports'
}

// headRPC runs one RPC of reqLen bytes answered by respLen bytes between
// two hosts whose endpoints carry headBytes of each message (0: all),
// each message starting with a pattern the other side reads back.
func headRPC(t *testing.T, v homaconf.Variant, headBytes, reqLen, respLen int) headExchange {
	t.Helper()
	const rate = 10_000_000_000
	n := starWith(t, 2, Config{RateBps: rate, Delay: time.Microsecond, HeadBytes: headBytes})
	for i, h := range n.Nodes() {
		cfg := homaCfg(rate)
		cfg.Variant = v
		if err := h.Start(cfg, uint64(i)<<40, time.Unix(1_000_000, 0), nil); err != nil {
			t.Fatal(err)
		}
	}
	pattern := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = seed + byte(i)
		}
		return b
	}
	var x headExchange
	srv := n.Node("h2")
	resp := pattern(respLen, 100)
	if err := srv.Serve(4000, func(sr *homa.ServerRPC) {
		x.reqHead, x.reqLen = bytes.Clone(sr.Request()), sr.Length()
		if err := srv.Reply(sr, resp); err != nil {
			t.Errorf("reply: %v", err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	n.Node("h1").Call(netip.AddrPortFrom(srv.IP, 4000), pattern(reqLen, 1), func(r []byte, info homa.CallInfo, err error) {
		if err != nil {
			t.Errorf("call: %v", err)
		}
		x.respHead, x.respLen, x.rtt = bytes.Clone(r), info.RespLength, info.Done.Sub(info.Sent)
	})
	n.Clock().Run(int64(50 * time.Millisecond))
	for _, h := range n.Nodes() {
		x.txBytes += h.Endpoint().Stats().TxBytes
	}
	for _, st := range n.SwitchStats() {
		for _, p := range st.Ports {
			x.switchBytes += p.TxBytes
		}
	}
	return x
}

// TestHeadBytes checks that endpoints carrying only each message's first
// bytes (Config.HeadBytes) run the protocol exactly as with every byte:
// the same completion time and bytes on every link, every variant; the
// receivers get the messages' first bytes and their true lengths.
func TestHeadBytes(t *testing.T) {
	const head, reqLen, respLen = 26, 200_000, 50_000
	for _, v := range homaconf.Variants {
		t.Run(string(v), func(t *testing.T) {
			all := headRPC(t, v, 0, reqLen, respLen)
			part := headRPC(t, v, head, reqLen, respLen)
			if all.reqLen != reqLen || all.respLen != respLen || len(all.reqHead) != reqLen || len(all.respHead) != respLen {
				t.Fatalf("every byte carried: request %d (%d held), response %d (%d held), want %d and %d",
					all.reqLen, len(all.reqHead), all.respLen, len(all.respHead), reqLen, respLen)
			}
			if part.reqLen != reqLen || part.respLen != respLen {
				t.Errorf("head only: lengths %d and %d, want %d and %d", part.reqLen, part.respLen, reqLen, respLen)
			}
			if !bytes.Equal(part.reqHead, all.reqHead[:head]) || !bytes.Equal(part.respHead, all.respHead[:head]) {
				t.Errorf("head only: first bytes %v / %v, want %v / %v", part.reqHead, part.respHead, all.reqHead[:head], all.respHead[:head])
			}
			if part.rtt != all.rtt || part.txBytes != all.txBytes || part.switchBytes != all.switchBytes {
				t.Errorf("head only: RTT %v, endpoints sent %d B, switch %d B; every byte: %v, %d B, %d B",
					part.rtt, part.txBytes, part.switchBytes, all.rtt, all.txBytes, all.switchBytes)
			}
		})
	}
}
