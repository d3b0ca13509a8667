package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatb/homatb/hostagent/adversary"
	"github.com/homatb/homatb/hostagent/adversary/kind"
)

// adversaryFlags are the command-line settings of `homatb adversary`.
type adversaryFlags struct {
	local, target, kind, out string
	peers                    []string
	spoof                    bool
	port                     uint16
	rate                     float64
	start, dur               time.Duration
	seed                     uint64
	mtu                      int
}

// newAdversaryCmd is a misbehaving host the orchestrator starts inside an
// adversary host's namespace for a scenario's adversaries entry.
func newAdversaryCmd() *cobra.Command {
	f := &adversaryFlags{}
	cmd := &cobra.Command{Use: "adversary --local IP --kind KIND --target IP --rate BPS --for DURATION [--start DURATION] [--out FILE]", Args: cobra.NoArgs, RunE: f.run,
		Short: "Attack a victim host: forged GRANTs or RESENDs, unscheduled floods, priority abuse, malformed packets (bounded in rate and time)"}
	fl := cmd.Flags()
	fl.StringVar(&f.local, "local", "", "this host's IPv4 address (required)")
	fl.StringVar(&f.target, "target", "", "the victim's IPv4 address (required)")
	fl.StringVar(&f.kind, "kind", "", fmt.Sprintf("the attack, one of %v", kind.All()))
	fl.Uint16Var(&f.port, "port", 4000, "the victim's Homa server port")
	fl.Float64Var(&f.rate, "rate", 0, "bits per second of IP packets (required)")
	fl.DurationVar(&f.start, "start", 0, "wait this long before attacking")
	fl.DurationVar(&f.dur, "for", 0, "attack for this long (required)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the packets' ids and damage")
	fl.IntVar(&f.mtu, "mtu", 1500, "the link's MTU")
	fl.BoolVar(&f.spoof, "spoof", false, "forged_grants and forged_resend: send from the target's address to --peers, naming the ids 2, 4, ... of their Calls")
	fl.StringSliceVar(&f.peers, "peers", nil, "with --spoof: the IPv4 addresses of the hosts that exchange messages with the target")
	fl.StringVar(&f.out, "out", "", "write the counters of what was sent here as JSON (default stdout)")
	return cmd
}

func (f *adversaryFlags) run(cmd *cobra.Command, _ []string) error {
	local, err := netip.ParseAddr(f.local)
	if err != nil {
		return usagef("--local: %v", err)
	}
	target, err := netip.ParseAddr(f.target)
	if err != nil {
		return usagef("--target: %v", err)
	}
	cfg := adversary.Config{Kind: adversary.Kind(f.kind), Target: target, Port: f.port, Rate: f.rate, For: f.dur, MTU: f.mtu, Seed: f.seed}
	if !cfg.Kind.Valid() || f.rate <= 0 || f.dur <= 0 {
		return usagef("expected --kind one of %v, a positive --rate and --for; got %q, %g, %v", kind.All(), f.kind, f.rate, f.dur)
	}
	cfg.Spoof = f.spoof
	for _, p := range f.peers {
		a, err := netip.ParseAddr(p)
		if err != nil {
			return usagef("--peers: %v", err)
		}
		cfg.Peers = append(cfg.Peers, a)
	}
	if f.spoof && len(cfg.Peers) == 0 {
		return usagef("--spoof needs --peers")
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	open := func() (adversary.Sender, func() error, error) { return adversary.Open(local, cfg.Kind) }
	if f.spoof && (cfg.Kind == kind.ForgedGrants || cfg.Kind == kind.ForgedResend) {
		open = func() (adversary.Sender, func() error, error) { return adversary.OpenSpoofed(target) }
	}
	s, closeFn, err := open()
	if err != nil {
		return err
	}
	defer closeFn()
	select {
	case <-ctx.Done():
	case <-time.After(f.start):
	}
	c, err := adversary.Run(ctx, s, cfg)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if f.out == "" {
		_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
		return err
	}
	if err := os.WriteFile(f.out, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("adversary: write counters: %w", err)
	}
	return nil
}
