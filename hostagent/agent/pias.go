package agent

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/pias"
)

// piasConfig is the PIAS tagging a TCP Configure request asks for; false
// when it asks for none.
func piasConfig(tp *agentpb.TcpParams) (pias.Config, bool, error) {
	if !tp.GetPias() {
		return pias.Config{}, false, nil
	}
	if tp.GetLinkBps() == 0 {
		return pias.Config{}, false, driver.Invalid("tcp.link_bps", 0, "PIAS sizes its thresholds from the host's link rate")
	}
	us := time.Microsecond
	cfg := pias.ForRun(tp.GetLinkBps(), time.Duration(max(tp.GetBaseRttUs(), 1))*us, tp.GetPiasThresholds(),
		time.Duration(tp.GetPiasIdleResetUs())*us)
	if err := cfg.Validate(); err != nil {
		return cfg, false, driver.Invalid("tcp.pias_thresholds", tp.GetPiasThresholds(), "%v", err)
	}
	return cfg, true, nil
}

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
