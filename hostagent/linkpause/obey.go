// Package linkpause has a host obey the priority flow control (IEEE
// 802.1Qbb) PAUSE frames its switch sends, as a NIC does in hardware: a
// veth obeys none, so the frames arrive as ordinary packets and the host
// must stop itself. The engine's RoCE reads them through a Socket and holds
// its queue pairs; traffic the kernel sends (kernel TCP) is held by a Hold,
// which stops the token bucket (tbf) that shapes the host's link.
package linkpause

import (
	"errors"
	"log/slog"
	"net"

	"github.com/homatb/homatb/wire"
)

// Obey reads frames with read until it fails for good (an error that
// wraps net.ErrClosed, or eleven others in a row) and hands fn each PAUSE
// frame that names a priority of vector: the longest quanta it gives any
// of them, 0 when it resumes them all. It stops early when fn returns
// false.
func Obey(read func([]byte) (int, error), vector uint8, log *slog.Logger, fn func(quanta uint16) bool) {
	buf := make([]byte, 128)
	for failures := 0; failures <= 10; {
		n, err := read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			failures++ // a transient error, retried a bounded number of times in a row
			log.Warn("read pause frame", "err", err, "in_a_row", failures)
			continue
		}
		failures = 0
		vec, quanta, ok := wire.ParsePFCFrame(buf[:n])
		if !ok || vec&vector == 0 {
			continue
		}
		var q uint16
		for p := range wire.PFCClasses {
			if vec&vector&(1<<p) != 0 {
				q = max(q, quanta[p])
			}
		}
		if !fn(q) {
			return
		}
	}
}
