// Command swbench is the helper of bench/switch/run.sh: a batched UDP
// traffic generator, sink, echo server and latency prober (run inside the
// benchmark's network namespaces), a two-port forwarder on the embedded
// dataplane (the target until `homatb switch` can be programmed in the
// benchmark), and the report that turns the measurements into ratios.
//
//	swbench fwd    -i 1@IFACE -i 2@IFACE [--link-rate 10Gbit] [--spin 0] [--stats-file F]
//	swbench sink   --listen IP:PORT --duration D
//	swbench blast  --dst IP:PORT --size BYTES --duration D [--pps N] [--tos T]
//	swbench echo   --listen IP:PORT --duration D
//	swbench probe  --dst IP:PORT --count N --interval D [--cpu-pid PID]
//	swbench report RESULTS.jsonl
//
// Every measuring command prints one JSON object on stdout.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: swbench fwd|sink|blast|echo|probe|report ...")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmds := map[string]func(context.Context, []string) (any, error){
		"fwd":    func(ctx context.Context, a []string) (any, error) { return runFwd(ctx, a, log) },
		"sink":   runSink,
		"blast":  runBlast,
		"echo":   runEcho,
		"probe":  runProbe,
		"report": runReport,
	}
	cmd, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "swbench: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	res, err := cmd(ctx, os.Args[2:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "swbench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	if res != nil {
		if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
			fmt.Fprintf(os.Stderr, "swbench %s: %v\n", os.Args[1], err)
			os.Exit(1)
		}
	}
}
