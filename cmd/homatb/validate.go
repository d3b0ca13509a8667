package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homatb/homatb/internal/units"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/simulate"
)

// newValidateCmd checks scenario files without running them: every error
// names the file, line and field and says what was expected.
func newValidateCmd() *cobra.Command {
	var verbose, simulated bool
	cmd := &cobra.Command{
		Use:   "validate SCENARIO.yaml... (- reads standard input)",
		Short: "Check scenario files without running them",
		Long: `Check scenario files without running them: the checks homatb run makes before
building the network. "-" reads a scenario from standard input. Exits 0 when
every file is valid, 2 when one is not.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var failed []string
			for _, f := range args {
				plan, err := loadPlan(f, cmd.InOrStdin(), scenario.Options{Simulate: simulated, CPUs: runtime.NumCPU()})
				if err == nil && simulated {
					if err = simulate.Check(plan); err != nil {
						err = fmt.Errorf("%s: %w", f, err)
					}
				}
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					failed = append(failed, f)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok, %s\n", f, units.Count(len(plan.Experiments), "experiment"))
				for _, w := range plan.Warnings() {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", f, w)
				}
				if verbose {
					if err := plan.Describe(cmd.OutOrStdout()); err != nil {
						return err
					}
				}
			}
			if len(failed) > 0 {
				return usagef("invalid scenario: %s", strings.Join(failed, ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print the expanded plan")
	cmd.Flags().BoolVar(&simulated, "simulate", false, "also check that homatb run --simulate can run it (no TCP-NV or BBR, no BMv2, no real machines)")
	return cmd
}

// stdinName is how errors name a scenario read from standard input.
const stdinName = "<stdin>"

// loadPlan reads, validates and expands the scenario in file, or in stdin
// when file is "-".
func loadPlan(file string, stdin io.Reader, opt scenario.Options) (*scenario.Plan, error) {
	if file != "-" {
		return scenario.Load(file, opt)
	}
	data, err := io.ReadAll(stdin)
	if err != nil {
		return nil, fmt.Errorf("read scenario from standard input: %w", err)
	}
	src, err := scenario.Parse(stdinName, data)
	if err != nil {
		return nil, err
	}
	return src.Plan(opt)
}
