package agent

import (
	"fmt"
	"io"
	"net/netip"

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
