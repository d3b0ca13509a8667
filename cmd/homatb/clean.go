package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatb/homatb/hostagent/tcpcc"
	"github.com/homatb/homatb/testbed/cleanup"
)

// newCleanCmd removes what runs left (processes, interfaces, namespaces held
// by them, sockets), found by their tag like `mn -c`.
func newCleanCmd() *cobra.Command {
	var (
		tag, registry string
		force, dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what crashed or interrupted runs left behind",
		Long: "clean finds processes carrying HOMATB_RUN=<tag>, root-namespace interfaces named\n" +
			"after a run tag and the runs' registration files, and removes them. Runs whose\n" +
			"orchestrator is still alive are left alone unless --force is given. It also\n" +
			"unregisters homatb's BPF TCP congestion controls (homatb_*) when no run is alive.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 && !dryRun {
				return fmt.Errorf("clean needs root (it kills run processes and deletes interfaces); try: sudo homatb clean")
			}
			found, err := cleanup.Find(registry, tag)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			removed := 0
			var failed error
			for _, l := range found {
				if l.Empty() {
					continue
				}
				if l.Alive && !force {
					fmt.Fprintf(out, "keeping %s\n", l)
					continue
				}
				fmt.Fprintf(out, "removing %s\n", l)
				for _, p := range l.Procs {
					fmt.Fprintf(out, "  process %d: %s\n", p.PID, p.Cmd)
				}
				for _, i := range l.Intfs {
					fmt.Fprintf(out, "  interface %s\n", i)
				}
				for _, f := range l.Files {
					fmt.Fprintf(out, "  file %s\n", f)
				}
				if dryRun {
					continue
				}
				if err := cleanup.Remove(cmd.Context(), l, 2*time.Second, force); err != nil {
					failed = err
					fmt.Fprintf(cmd.ErrOrStderr(), "  %v\n", err)
					continue
				}
				removed++
			}
			// The BPF congestion controls a run registered: the kernel drops
			// them with the run's process, so one left is held by a process
			// that hangs. A live run's are its own: kept unless --force.
			if tag == "" {
				n, err := cleanCongestion(out, found, force, dryRun)
				removed += n
				if err != nil {
					failed = err
					fmt.Fprintf(cmd.ErrOrStderr(), "  %v\n", err)
				}
			}
			if removed == 0 && failed == nil && !dryRun {
				fmt.Fprintln(out, "nothing to clean")
			}
			return failed
		},
	}
	cmd.Flags().StringVar(&tag, "run", "", "clean only this run tag (hbXXXXX); default every run found")
	cmd.Flags().StringVar(&registry, "registry", cleanup.DefaultRegistry, "directory where runs register")
	cmd.Flags().BoolVar(&force, "force", false, "also remove runs whose orchestrator is still alive")
	cmd.Flags().BoolVarP(&dryRun, "dry-run", "n", false, "only list what would be removed")
	return cmd
}

// cleanCongestion unregisters homatb's BPF congestion controls still
// registered, unless a live run (which may be using them) was kept.
func cleanCongestion(out io.Writer, runs []cleanup.Leftovers, force, dryRun bool) (int, error) {
	for _, l := range runs {
		if l.Alive && !force {
			return 0, nil
		}
	}
	left, err := tcpcc.FindRegistered()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, l := range left {
		fmt.Fprintf(out, "removing %s\n", l)
		if dryRun {
			continue
		}
		if err := l.Unregister(); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
