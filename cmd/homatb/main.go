// Command homatb is the one binary of the testbed: it runs scenarios and
// reports, and is also the switch, agent and controller processes that a run
// starts inside Mininet.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal a second one ends homatb at once (the
		// default action): the Mininet runner, in its own process group,
		// still tears the network down when its stdin closes.
		<-ctx.Done()
		stop()
	}()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "homatb:", err)
		os.Exit(exitCode(err))
	}
}
