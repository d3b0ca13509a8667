package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatb/homatb/hostagent/agent"
	"github.com/homatb/homatb/internal/memlimit"
	"github.com/homatb/homatb/internal/runcerts"
)

// agentFlags are the command-line settings of `homatb agent`.
type agentFlags struct {
	socket, listen, name, logFile, recordsDir string
	tlsCert, tlsKey, tlsCA                    string
	debug, followHeap                         bool
	procs, nice, rtPrio                       int
	slice                                     time.Duration
}

// newAgentCmd is the host agent process the orchestrator starts inside a
// host's network namespace.
func newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent --socket PATH --name HOST [--listen ADDR [--tls-cert F --tls-key F --tls-ca F]] [--log-file F] [--records-dir DIR]",
		Short: "Run a host agent: RPC workloads over Homa or TCP, driven over gRPC",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.socket, "socket", "", "Unix socket path of the control API")
	fl.StringVar(&f.listen, "listen", "", "also serve the control API on this TCP address (host:port); off loopback it needs --tls-*")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "the agents' certificate from 'homatb certs' (agent.pem): --listen then takes only the run's orchestrator (mutual TLS)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "its key (agent-key.pem)")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "the run's CA (ca.pem), which must have signed the client's certificate")
	fl.StringVar(&f.name, "name", "", "host name written into records (required)")
	fl.StringVar(&f.logFile, "log-file", "", "append logs to this file (default stderr)")
	fl.StringVar(&f.recordsDir, "records-dir", "", "directory for per-experiment records (default: the log file's directory, else the system temp directory)")
	fl.BoolVar(&f.debug, "debug", false, "log at debug level")
	fl.BoolVar(&f.followHeap, "follow-heap", true, "collect garbage at a soft memory limit that follows the live heap (the live heap, 70% of the room GOGC gives it, and the runtime's memory outside the heap) instead of at GOGC's pacing, so the resident size stays flat while the live heap does; a GOMEMLIMIT in the environment turns it off")
	// One P by default: an agent is one host's network stack, and with one
	// P the socket reader hands packets to the protocol loop on the same
	// thread instead of waking another, which on a shared 2-vCPU machine
	// with ten agents costs more than the work (docs/homa.md, incast runs).
	fl.IntVar(&f.procs, "procs", 1, "GOMAXPROCS of the agent (0: Go's default, one per vCPU)")
	fl.IntVar(&f.nice, "nice", defaultNice, "scheduling priority (nice value) of the agent's threads when not real-time; 0 leaves it")
	fl.DurationVar(&f.slice, "slice", defaultSlice, "EEVDF time slice of the agent's threads under ordinary scheduling (100µs-100ms; 0 leaves the kernel's)")
	fl.IntVar(&f.rtPrio, "rt-priority", 0, "SCHED_FIFO priority of the agent's threads (1-99; homatb run --realtime sets it); 0 for ordinary scheduling at --nice")
	return cmd
}

func runAgent(cmd *cobra.Command, f agentFlags) error {
	if f.procs > 0 {
		runtime.GOMAXPROCS(f.procs)
	}
	out := cmd.ErrOrStderr()
	if f.logFile != "" {
		lf, err := os.OpenFile(f.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("agent: log file: %w", err)
		}
		defer lf.Close()
		out = lf
		if f.recordsDir == "" {
			f.recordsDir = filepath.Dir(f.logFile)
		}
	}
	level := slog.LevelInfo
	if f.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level})).With("agent", f.name)
	applyScheduling(f.rtPrio, f.nice, f.slice, log)
	defer heapProfilesFromEnv("agent-"+f.name, log)()
	defer runtimeMetricsFromEnv("agent-"+f.name, log)()
	if f.followHeap {
		// A flat live heap left to GOGC's pacing steps the agent's resident
		// size up at moments set by the machine's load (docs/soak.md). Not
		// stopped: the limit holds until the process exits, its records'
		// last writes and transfers included.
		go memlimit.Follow(context.WithoutCancel(cmd.Context()), 100*time.Millisecond)
	}
	o := agent.Options{Socket: f.socket, Listen: f.listen, Name: f.name, RecordsDir: f.recordsDir, Logger: log}
	if f.tlsCert != "" || f.tlsKey != "" || f.tlsCA != "" {
		if f.listen == "" {
			return errors.New("agent: --tls-* secure --listen, which is not set")
		}
		cfg, err := runcerts.ServerConfig(runcerts.Files{Cert: f.tlsCert, Key: f.tlsKey, CA: f.tlsCA})
		if err != nil {
			return fmt.Errorf("agent: --tls-cert/--tls-key/--tls-ca: %w", err)
		}
		o.TLS = cfg
	}
	return agent.Run(cmd.Context(), o)
}
