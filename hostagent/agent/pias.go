package agent

import (
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/homatb/homatb/hostagent/pias"
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
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if pfx, err := netip.ParsePrefix(a.String()); err == nil && pfx.Addr() == want {
				return ifc.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no interface holds %s", address)
}
