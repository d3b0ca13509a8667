package agent

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"

	"github.com/homatb/homatb/hostagent/linkpause"
	"github.com/homatb/homatb/hostagent/pias"
	"github.com/homatb/homatb/internal/sysinfo"
)

// attachPIAS starts tagging the TCP packets leaving the interface that
// holds address, the host's NIC.
func attachPIAS(address string, cfg pias.Config) (io.Closer, error) {
	ifName, err := interfaceOf(address)
	if err != nil {
		return nil, fmt.Errorf("pias: %w", err)
	}
	t, err := pias.Attach(ifName, cfg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// holdLink has the host's link, the interface that holds address, obey
// the switch's PAUSE frames for the priorities of vector (the kernel's
// traffic waits in the link's tbf while paused).
func holdLink(address string, vector uint32, linkBps uint64, log *slog.Logger) (*linkpause.Hold, error) {
	ifName, err := interfaceOf(address)
	if err != nil {
		return nil, fmt.Errorf("pause: %w", err)
	}
	if vector > 0xff {
		return nil, fmt.Errorf("pause: priorities %#x: expected bits 0 to 7", vector)
	}
	return linkpause.Start(ifName, uint8(vector), linkBps, log)
}

// interfaceOf names the interface that holds address.
func interfaceOf(address string) (string, error) {
	want, err := netip.ParseAddr(address)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", address, err)
	}
	ifi, err := sysinfo.InterfaceOf(want)
	if err != nil {
		return "", err
	}
	return ifi.Name, nil
}
