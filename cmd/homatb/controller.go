package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/controller/p4rtclient"
	"github.com/homatb/homatb/internal/units"
	"github.com/spf13/cobra"
)

// controllerOpts are the flags of `homatb controller`.
type controllerOpts struct {
	topology     string
	dscp         string
	ecnThreshold uint32
	noARPProxy   bool
	loadBalance  string
	electionID   uint64
	dialTimeout  time.Duration
	verifyOnly   bool
	sync         bool
	watch        bool
	pollInterval time.Duration
	telemetry    string
	experiment   string
	verbose      bool
	// Defences (docs/controller.md, "Defences").
	untrusted    []string
	remarkDSCP   uint8
	antiSpoofing bool
	meters       []string
}

// newControllerCmd is `homatb controller`: program the switches of a
// topology over P4Runtime, verify, and optionally stay to re-push after
// switch restarts and record queue telemetry.
func newControllerCmd() *cobra.Command {
	o := &controllerOpts{}
	cmd := &cobra.Command{
		Use:   "controller --topology FILE",
		Short: "Program the P4 switches of a topology over P4Runtime and sample their queues",
		Long: `Pushes the tor.p4 pipeline to every switch of the topology, installs
forwarding to every host, the DSCP-to-queue policy, ARP-proxy and ECN entries,
then reads them back and verifies them. With --watch or --telemetry it keeps
running until interrupted: it re-pushes the state of a switch that restarts and
samples per-queue counters into a telemetry.csv file. See docs/controller.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runController(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.topology, "topology", "", "topology file (YAML, see docs/controller.md)")
	fl.StringVar(&o.dscp, "dscp", "default", `DSCP-to-queue policy: "default" (CSp -> queue p), "collapse:N" (N = 1, 2, 4, 8), or "dscp=queue,..."`)
	fl.Uint32Var(&o.ecnThreshold, "ecn-threshold", 0, "mark ECN CE when a queue holds at least this many packets (0: off)")
	fl.BoolVar(&o.noARPProxy, "no-arp-proxy", false, "do not install ARP-proxy entries")
	fl.StringVar(&o.loadBalance, "load-balancing", controller.LoadBalanceSpray, "spread traffic over equal-cost paths per packet (spray) or per flow (ecmp)")
	fl.Uint64Var(&o.electionID, "election-id", 1, "P4Runtime election id: the embedded switch makes a controller primary only with an id at least the highest it has seen since it started (BMv2: the highest of the connected controllers); a lower id fails at once and names the id to use")
	fl.DurationVar(&o.dialTimeout, "dial-timeout", 10*time.Second, "how long to keep trying to reach each switch")
	fl.BoolVar(&o.verifyOnly, "verify-only", false, "do not write: only check that the switches hold the expected entries")
	fl.BoolVar(&o.sync, "sync", false, "change the switches' entries in place to match, without re-pushing the pipeline (counters keep counting)")
	fl.BoolVar(&o.watch, "watch", false, "stay running until interrupted, re-pushing state to restarted switches")
	fl.DurationVar(&o.pollInterval, "poll-interval", 100*time.Millisecond, "telemetry sampling interval")
	fl.StringVar(&o.telemetry, "telemetry", "", "sample queue counters until interrupted and write them to this CSV file (implies --watch)")
	fl.StringVar(&o.experiment, "experiment", "controller", "experiment name written in the telemetry rows")
	fl.BoolVarP(&o.verbose, "verbose", "v", false, "log debug detail")
	fl.StringSliceVar(&o.untrusted, "untrusted", nil, "hosts whose DSCP the switches re-mark to --remark-dscp before classifying")
	fl.Uint8Var(&o.remarkDSCP, "remark-dscp", 0, "the DSCP value untrusted hosts' packets get")
	fl.BoolVar(&o.antiSpoofing, "anti-spoofing", false, "drop packets from a host's port whose IPv4 source is not that host's")
	fl.StringSliceVar(&o.meters, "meter", nil, `meter each host port's packets in some queues: "QUEUES:RATE:BURST[:drop]", e.g. "6+7:10Mbit:64KB" (excess re-marked to queue 0, or dropped)`)
	_ = cmd.MarkFlagRequired("topology")
	return cmd
}

func runController(ctx context.Context, o *controllerOpts) error {
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	topo, err := controller.LoadTopology(o.topology)
	if err != nil {
		return err
	}
	dscp, err := controller.ParseDSCPPolicy(o.dscp)
	if err != nil {
		return err
	}
	policy := controller.Policy{DSCPQueue: dscp, ECNThresholdPkts: o.ecnThreshold, NoARPProxy: o.noARPProxy, LoadBalancing: o.loadBalance,
		Defences: controller.Defences{Untrusted: o.untrusted, RemarkDSCP: o.remarkDSCP, AntiSpoofing: o.antiSpoofing}}
	for _, m := range o.meters {
		cm, err := parseMeter(m)
		if err != nil {
			return err
		}
		policy.Defences.Meters = append(policy.Defences.Meters, cm)
	}
	if err := policy.Validate(); err != nil {
		return err
	}
	switches, err := controller.Connect(ctx, topo,
		p4rtclient.WithElectionID(p4rtclient.ElectionID{Low: o.electionID}),
		p4rtclient.WithDialTimeout(o.dialTimeout),
		p4rtclient.WithLogger(log))
	if err != nil {
		return err
	}
	defer switches.Close()
	if o.verifyOnly || o.sync {
		for _, sw := range topo.Switches {
			if err := switches.Client(sw.Name).FetchPipeline(ctx); err != nil {
				return err
			}
		}
	}
	switch {
	case o.verifyOnly:
		if err := switches.Verify(ctx, policy); err != nil {
			return err
		}
		log.Info("switches verified", "switches", len(topo.Switches))
	case o.sync:
		if err := switches.Sync(ctx, policy); err != nil {
			return err
		}
		log.Info("switches synced and verified", "switches", len(topo.Switches))
	default:
		if err := switches.Program(ctx, policy); err != nil {
			return err
		}
		log.Info("switches programmed and verified", "switches", len(topo.Switches), "hosts", len(topo.Hosts))
	}
	if !o.watch && o.telemetry == "" {
		return nil
	}
	if o.telemetry == "" {
		<-ctx.Done()
		return nil
	}
	return recordTelemetry(ctx, switches, o, log)
}

// recordTelemetry samples until ctx ends and writes the CSV. The file is
// created first so a bad path fails before the run, not after it.
func recordTelemetry(ctx context.Context, switches *controller.Switches, o *controllerOpts, log *slog.Logger) (err error) {
	out, err := os.Create(o.telemetry)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("telemetry: %w", cerr)
		}
	}()
	poller, err := switches.NewPoller(o.pollInterval)
	if err != nil {
		return err
	}
	log.Info("sampling telemetry until interrupted", "interval", o.pollInterval, "file", o.telemetry)
	runErr := poller.Run(ctx)
	if werr := poller.WriteCSV(out, o.experiment); werr != nil {
		return errors.Join(runErr, werr)
	}
	log.Info("telemetry written", "rows", len(poller.Samples()), "file", o.telemetry)
	return runErr
}

// parseMeter reads --meter's "QUEUES:RATE:BURST[:drop]" (queues joined by
// "+", a rate in bits per second, a burst in bytes).
func parseMeter(s string) (controller.Meter, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 && (len(parts) != 4 || parts[3] != "drop") {
		return controller.Meter{}, fmt.Errorf("--meter %q: expected QUEUES:RATE:BURST[:drop], e.g. 6+7:10Mbit:64KB", s)
	}
	var m controller.Meter
	for _, q := range strings.Split(parts[0], "+") {
		v, err := strconv.ParseUint(q, 10, 3)
		if err != nil {
			return m, fmt.Errorf("--meter %q: queue %q: expected 0..7", s, q)
		}
		m.Queues = append(m.Queues, uint8(v))
	}
	rate, err := units.ParseRate(parts[1])
	if err != nil {
		return m, fmt.Errorf("--meter %q: rate: %w", s, err)
	}
	burst, err := units.ParseSize(parts[2])
	if err != nil {
		return m, fmt.Errorf("--meter %q: burst: %w", s, err)
	}
	m.RateBytes, m.BurstBytes, m.Drop = int64(rate/8), burst, len(parts) == 4
	return m, nil
}
