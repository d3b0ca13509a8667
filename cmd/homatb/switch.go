package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/homatb/homatb/internal/units"
	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/p4/target"
	"github.com/homatb/homatb/rundir"
)

// switchFlags are the command-line settings of `homatb switch`, named like
// BMv2's simple_switch_grpc options where it has one.
type switchFlags struct {
	interfaces      []string
	deviceID        uint64
	grpcAddr        string
	linkRate        string
	portRates       []string
	queueDepthPkts  int
	queueDepthBytes int
	queueDepths     []string
	portBufferBytes int
	portBufferPkts  int
	sharedBuffer    int
	sharedAlpha     float64
	queueRates      []string
	pcapDir         string
	postcards       string
	postcardRing    int
	statsFile       string
	adminSocket     string
	dropProb        []string
	dropEvery       []string
	spin            time.Duration
	batch           int
	nice            int
	rtPrio          int
	slice           time.Duration
	logLevel        string
	noP4            bool
	pfcPriorities   []int
	pfcXoff         int
	pfcXon          int
	pfcHeadroom     int
}

// newSwitchCmd is `homatb switch`: the embedded P4 target running tor.p4,
// programmed over P4Runtime like simple_switch_grpc --no-p4.
func newSwitchCmd() *cobra.Command {
	f := &switchFlags{}
	cmd := &cobra.Command{
		Use:   "switch -i PORT@IFACE [-i PORT@IFACE ...] [flags]",
		Short: "Run the embedded tor.p4 switch target (P4Runtime server + AF_PACKET dataplane)",
		Long: `Runs the tor.p4 pipeline natively on the named interfaces, with eight
strict-priority queues and a link-rate shaper per egress port, and serves
P4Runtime 1.4.1 on --grpc-server-addr. It starts with no pipeline config, like
simple_switch_grpc --no-p4: a controller pushes tor.p4's P4Info with
SetForwardingPipelineConfig and writes every forwarding entry.

Queue settings mirror BMv2's set_queue_depth / set_queue_rate. Statistics are
written as JSON to --stats-file at exit and on SIGUSR1; --admin-socket serves
GET /stats, GET /faults and POST /faults over HTTP on a Unix socket, and
POST /postcards/start and /postcards/stop, per-packet records of every
forwarded frame (--postcards records from start to exit).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSwitch(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.interfaces, "interface", "i", nil, "data port as PORT@IFACE (PORT 1..63), repeatable")
	fl.Uint64Var(&f.deviceID, "device-id", 1, "P4Runtime device_id")
	fl.StringVar(&f.grpcAddr, "grpc-server-addr", "127.0.0.1:9559", "P4Runtime listen address")
	fl.StringVar(&f.linkRate, "link-rate", "1Gbit", `egress shaper rate of every port ("100Mbit", "1Gbit", bits/s, or "unlimited")`)
	fl.StringArrayVar(&f.portRates, "port-rate", nil, `PORT:RATE egress shaper rate of one port instead of --link-rate ("4Gbit"), repeatable`)
	fl.IntVar(&f.queueDepthPkts, "queue-depth-pkts", dataplane.DefaultQueueDepthPkts, "packet limit of every (port, queue), as BMv2's set_queue_depth")
	fl.IntVar(&f.queueDepthBytes, "queue-depth-bytes", 0, "byte limit of every (port, queue) (0: packets only)")
	fl.StringArrayVar(&f.queueDepths, "queue-depth", nil, "PORT:QUEUE:PKTS packet limit of one queue (QUEUE * for all), repeatable")
	fl.IntVar(&f.portBufferBytes, "port-buffer-bytes", 0, "byte limit over all queues of a port (0: none)")
	fl.IntVar(&f.portBufferPkts, "port-buffer-pkts", 0, "packet limit over all queues of a port (0: none)")
	fl.IntVar(&f.sharedBuffer, "shared-buffer-bytes", 0, "one shared buffer with dynamic thresholds for all queues (0: off)")
	fl.Float64Var(&f.sharedAlpha, "shared-alpha", dataplane.DefaultSharedAlpha, "dynamic-threshold alpha of the shared buffer")
	fl.StringArrayVar(&f.queueRates, "queue-rate", nil, "PORT:QUEUE:PPS rate limit of one queue (QUEUE * for all), as BMv2's set_queue_rate, repeatable")
	fl.StringVar(&f.pcapDir, "pcap", "", "write <iface>_in.pcap and <iface>_out.pcap per port into DIR")
	fl.StringVar(&f.postcards, "postcards", "", "record every forwarded frame (a per-packet postcard, docs/formats.md) into FILE from start to exit; the admin socket's POST /postcards/start records per experiment instead")
	fl.IntVar(&f.postcardRing, "postcard-ring", dataplane.DefaultPostcardRing, "per-packet records a port may hold before its writer drains them (more are counted as postcard_drops)")
	fl.StringVar(&f.statsFile, "stats-file", "", "write the statistics JSON here at exit and on SIGUSR1")
	fl.StringVar(&f.adminSocket, "admin-socket", "", "serve the admin HTTP API on this Unix socket")
	fl.StringArrayVar(&f.dropProb, "drop-prob", nil, "PORT:P drop each frame leaving PORT with probability P, repeatable")
	fl.StringArrayVar(&f.dropEvery, "drop-every", nil, "PORT:N drop every Nth frame leaving PORT, repeatable")
	fl.DurationVar(&f.spin, "spin", 0, "poll this long before sleeping when idle (trades CPU for wake-up latency)")
	fl.IntVar(&f.batch, "batch", dataplane.DefaultBatchSize, "receive and send batch size")
	fl.IntVar(&f.nice, "nice", defaultNice, "scheduling priority (nice value) of the switch's threads when not real-time; 0 leaves it")
	fl.IntVar(&f.rtPrio, "rt-priority", 0, "SCHED_FIFO priority of the switch's threads (1-99; homatb run --realtime sets it); 0 for ordinary scheduling at --nice")
	fl.DurationVar(&f.slice, "slice", defaultSlice, "EEVDF time slice of the switch's threads under ordinary scheduling (100µs-100ms; 0 leaves the kernel's)")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.IntSliceVar(&f.pfcPriorities, "pfc-priorities", nil, "lossless priorities (egress queues 0..7) under PFC, 802.1Qbb: PAUSE frames at --pfc-xoff-pkts, resumes at --pfc-xon-pkts; none: PFC off")
	fl.IntVar(&f.pfcXoff, "pfc-xoff-pkts", 0, "with --pfc-priorities: packets from one ingress port and priority the switch buffers before it pauses that port's peer")
	fl.IntVar(&f.pfcXon, "pfc-xon-pkts", 0, "with --pfc-priorities: the count at which it resumes the peer")
	fl.IntVar(&f.pfcHeadroom, "pfc-headroom-pkts", 0, "with --pfc-priorities: packets a lossless queue may hold beyond its depth, for frames in flight when a PAUSE goes out")
	fl.BoolVar(&f.noP4, "no-p4", true, "start without a pipeline config (always the case; accepted for BMv2 compatibility)")
	return cmd
}

func runSwitch(ctx context.Context, f *switchFlags) error {
	log, err := newLogger(f.logLevel)
	if err != nil {
		return err
	}
	applyScheduling(f.rtPrio, f.nice, f.slice, log)
	defer heapProfilesFromEnv(fmt.Sprintf("switch-%d", f.deviceID), log)()
	defer runtimeMetricsFromEnv(fmt.Sprintf("switch-%d", f.deviceID), log)()
	cfg, err := f.dataplaneConfig(log)
	if err != nil {
		return err
	}
	sw, err := target.New(target.Config{DeviceID: f.deviceID, Addr: f.grpcAddr, Dataplane: &cfg, Logger: log.With("part", "p4runtime")})
	if err != nil {
		return err
	}
	dp := sw.Dataplane()
	if f.postcards != "" {
		// Run stops the recording and closes the file when it ends.
		if err := dp.StartPostcards(f.postcards); err != nil {
			return err
		}
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return sw.Run(gctx) })
	if f.adminSocket != "" {
		g.Go(func() error { return dataplane.ServeAdmin(gctx, f.adminSocket, dp.AdminHandler()) })
	}
	if f.statsFile != "" {
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		defer signal.Stop(usr1)
		g.Go(func() error {
			for {
				select {
				case <-gctx.Done():
					return nil
				case <-usr1:
					if err := writeStats(f.statsFile, dp.Stats()); err != nil {
						log.Error("write stats", "err", err)
					}
				}
			}
		})
	}
	log.Info("switch running", "device_id", f.deviceID, "grpc", sw.Addr(), "ports", len(cfg.Ports),
		"queue_depth_pkts", cfg.QueueDepthPkts, "queue_depth_bytes", cfg.QueueDepthBytes,
		"shared_buffer_bytes", cfg.SharedBufferBytes, "shared_alpha", cfg.SharedAlpha,
		"port_buffer_bytes", cfg.PortBufferBytes, "port_buffer_pkts", cfg.PortBufferPkts,
		"pfc_priorities", fmt.Sprintf("%08b", cfg.PFC.Priorities), "pfc_xoff_pkts", cfg.PFC.XoffPkts, "pfc_xon_pkts", cfg.PFC.XonPkts)
	err = g.Wait()
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = nil // SIGINT/SIGTERM: a clean stop
	}
	if f.statsFile != "" {
		err = errors.Join(err, writeStats(f.statsFile, dp.Stats()))
	}
	log.Info("switch stopped", "err", err)
	return err
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})).With("cmd", "switch"), nil
}

// dataplaneConfig turns the flags into a dataplane.Config.
func (f *switchFlags) dataplaneConfig(log *slog.Logger) (dataplane.Config, error) {
	cfg := dataplane.Config{
		DeviceID:          f.deviceID,
		Ports:             map[uint16]string{},
		QueueDepthPkts:    f.queueDepthPkts,
		QueueDepthBytes:   f.queueDepthBytes,
		PortBufferBytes:   f.portBufferBytes,
		PortBufferPkts:    f.portBufferPkts,
		SharedBufferBytes: f.sharedBuffer,
		SharedAlpha:       f.sharedAlpha,
		PcapDir:           f.pcapDir,
		PostcardRing:      f.postcardRing,
		Faults:            map[uint16]dataplane.Fault{},
		BatchSize:         f.batch,
		Spin:              f.spin,
		Logger:            log.With("part", "dataplane"),
	}
	if len(f.interfaces) == 0 {
		return cfg, errors.New("no ports: give at least one -i PORT@IFACE")
	}
	for _, s := range f.interfaces {
		port, iface, err := parsePortIface(s)
		if err != nil {
			return cfg, err
		}
		if _, dup := cfg.Ports[port]; dup {
			return cfg, fmt.Errorf("-i %s: port %d given twice", s, port)
		}
		cfg.Ports[port] = iface
	}
	rate, err := parseLinkRate(f.linkRate)
	if err != nil {
		return cfg, fmt.Errorf("--link-rate: %w", err)
	}
	cfg.LinkRateBps, cfg.Unshaped = rate, rate == 0
	for _, s := range f.portRates {
		port, v, err := parsePortValue(s)
		if err != nil {
			return cfg, fmt.Errorf("--port-rate: %w", err)
		}
		r, err := parseLinkRate(v)
		if err != nil || r == 0 {
			return cfg, fmt.Errorf("--port-rate %s: expected PORT:RATE with a rate such as 4Gbit", s)
		}
		if cfg.PortRateBps == nil {
			cfg.PortRateBps = map[uint16]uint64{}
		}
		cfg.PortRateBps[port] = r
	}
	for _, s := range f.queueDepths {
		port, queue, n, err := parsePortQueueValue(s)
		if err != nil {
			return cfg, fmt.Errorf("--queue-depth: %w", err)
		}
		cfg.QueueDepths = append(cfg.QueueDepths, dataplane.QueueDepth{Port: port, Queue: queue, Pkts: int(n)})
	}
	for _, s := range f.queueRates {
		port, queue, n, err := parsePortQueueValue(s)
		if err != nil {
			return cfg, fmt.Errorf("--queue-rate: %w", err)
		}
		cfg.QueueRates = append(cfg.QueueRates, dataplane.QueueRate{Port: port, Queue: queue, PPS: n})
	}
	for _, s := range f.dropProb {
		port, v, err := parsePortValue(s)
		if err != nil {
			return cfg, fmt.Errorf("--drop-prob: %w", err)
		}
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || p < 0 || p > 1 {
			return cfg, fmt.Errorf("--drop-prob %s: probability must be in [0, 1]", s)
		}
		fault := cfg.Faults[port]
		fault.DropProb = p
		cfg.Faults[port] = fault
	}
	for _, s := range f.dropEvery {
		port, v, err := parsePortValue(s)
		if err != nil {
			return cfg, fmt.Errorf("--drop-every: %w", err)
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return cfg, fmt.Errorf("--drop-every %s: N must be a non-negative integer", s)
		}
		fault := cfg.Faults[port]
		fault.EveryN = n
		cfg.Faults[port] = fault
	}
	for _, q := range f.pfcPriorities {
		if q < 0 || q >= dataplane.NumQueues {
			return cfg, fmt.Errorf("--pfc-priorities: priority %d not in 0..%d", q, dataplane.NumQueues-1)
		}
		cfg.PFC.Priorities |= 1 << q
	}
	cfg.PFC.XoffPkts, cfg.PFC.XonPkts, cfg.PFC.HeadroomPkts = f.pfcXoff, f.pfcXon, f.pfcHeadroom
	return cfg, nil
}

// parsePortIface parses BMv2's PORT@IFACE.
func parsePortIface(s string) (uint16, string, error) {
	ps, iface, ok := strings.Cut(s, "@")
	if !ok || iface == "" {
		return 0, "", fmt.Errorf("-i %q: want PORT@IFACE", s)
	}
	port, err := parsePort(ps)
	if err != nil {
		return 0, "", fmt.Errorf("-i %q: %w", s, err)
	}
	return port, iface, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n < 1 || n > dataplane.MaxPort {
		return 0, fmt.Errorf("port %q: want 1..%d", s, dataplane.MaxPort)
	}
	return uint16(n), nil
}

// parsePortValue parses PORT:VALUE.
func parsePortValue(s string) (uint16, string, error) {
	ps, v, ok := strings.Cut(s, ":")
	if !ok {
		return 0, "", fmt.Errorf("%q: want PORT:VALUE", s)
	}
	port, err := parsePort(ps)
	return port, v, err
}

// parsePortQueueValue parses PORT:QUEUE:N where QUEUE may be * (all queues
// of the port, -1 in dataplane terms).
func parsePortQueueValue(s string) (port uint16, queue int, n uint64, err error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return 0, 0, 0, fmt.Errorf("%q: want PORT:QUEUE:VALUE", s)
	}
	if port, err = parsePort(parts[0]); err != nil {
		return 0, 0, 0, fmt.Errorf("%q: %w", s, err)
	}
	queue = -1
	if parts[1] != "*" {
		q, err := strconv.Atoi(parts[1])
		if err != nil || q < 0 || q >= dataplane.NumQueues {
			return 0, 0, 0, fmt.Errorf("%q: queue must be 0..%d or *", s, dataplane.NumQueues-1)
		}
		queue = q
	}
	if n, err = strconv.ParseUint(parts[2], 10, 64); err != nil {
		return 0, 0, 0, fmt.Errorf("%q: value must be a non-negative integer", s)
	}
	return port, queue, n, nil
}

// parseLinkRate reads --link-rate: "unlimited", "none" or 0 turn the
// shaper off (0 returned); anything else is a rate as scenarios write it.
func parseLinkRate(s string) (uint64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "unlimited", "none", "0":
		return 0, nil
	}
	return units.ParseRate(s)
}

// writeStats writes the statistics JSON atomically, so a reader never
// sees half a file.
func writeStats(path string, st switchstats.Stats) error {
	if err := rundir.WriteJSON(path, st); err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	return nil
}
