package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/homatb/homatb/internal/units"
	"github.com/homatb/homatb/p4/dataplane"
)

// crossConnect is the benchmark's pipeline: a wire between ports 1 and 2
// that queues IPv4 frames by the priority Homa puts in the TOS byte. It
// does what the tor.p4 fast path costs least: one parse of the EtherType
// and the TOS byte.
type crossConnect struct{}

func (crossConnect) Ingress(frame []byte, inPort uint16, v *dataplane.Verdict) {
	v.EgressPort = 3 - inPort
	if len(frame) >= 16 && frame[12] == 0x08 && frame[13] == 0x00 {
		v.Queue = frame[15] >> 5
	}
}

func (crossConnect) Egress([]byte, *dataplane.EgressMeta) bool { return true }

type portFlags map[uint16]string

func (p portFlags) String() string { return fmt.Sprint(map[uint16]string(p)) }

func (p portFlags) Set(s string) error {
	num, iface, ok := strings.Cut(s, "@")
	n, err := strconv.ParseUint(num, 10, 16)
	if !ok || err != nil || iface == "" {
		return fmt.Errorf("want PORT@IFACE, got %q", s)
	}
	p[uint16(n)] = iface
	return nil
}

func runFwd(ctx context.Context, args []string, log *slog.Logger) (any, error) {
	fs := flag.NewFlagSet("fwd", flag.ContinueOnError)
	ports := portFlags{}
	fs.Var(ports, "i", "PORT@IFACE (twice: ports 1 and 2)")
	rate := fs.String("link-rate", "10Gbit", "egress shaping rate per port")
	spin := fs.Duration("spin", 0, "poll this long before sleeping")
	batch := fs.Int("batch", 0, "receive/send batch (0: dataplane default)")
	statsFile := fs.String("stats-file", "", "write the switch statistics JSON here at exit")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile here")
	procs := fs.Int("procs", 0, "GOMAXPROCS for the forwarder (0: Go's default, one per vCPU)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if _, ok := ports[1]; !ok || len(ports) != 2 || ports[2] == "" {
		return nil, fmt.Errorf("need -i 1@IFACE -i 2@IFACE")
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	bps, err := units.ParseRate(*rate)
	if err != nil {
		return nil, err
	}
	d, err := dataplane.New(dataplane.Config{
		Ports: ports, LinkRateBps: bps, Spin: *spin, BatchSize: *batch, Logger: log,
	}, crossConnect{})
	if err != nil {
		return nil, err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	log.Info("forwarding", "ports", map[uint16]string(ports), "rate", bps, "spin", *spin)
	start := time.Now()
	err = d.Run(ctx)
	if *statsFile != "" {
		b, merr := json.MarshalIndent(d.Stats(), "", "  ")
		if merr != nil {
			return nil, merr
		}
		if werr := os.WriteFile(*statsFile, b, 0o644); werr != nil {
			return nil, werr
		}
	}
	log.Info("stopped", "after", time.Since(start))
	return nil, err
}
