package sysinfo

import (
	"fmt"
	"net"
	"net/netip"
)

// InterfaceOf is the network interface that holds addr: a host's NIC,
// found by its data-plane address.
func InterfaceOf(addr netip.Addr) (*net.Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("interfaces: %w", err)
	}
	for i := range ifs {
		addrs, err := ifs[i].Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == addr {
				return &ifs[i], nil
			}
		}
	}
	return nil, fmt.Errorf("no interface holds %v", addr)
}
