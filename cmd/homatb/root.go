package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the command tree. Each subcommand lives in its own file
// and registers here, so there is no package-level state.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "homatb",
		Short: "A testbed for datacenter transports: Homa vs TCP through P4 priority queues",
		Long: `homatb runs datacenter transports (Homa, kernel TCP, pFabric, pHost, NDP,
PIAS) through an emulated rack of P4 switches and reports their latency.

Exit codes: 0 success; 1 a run failed or stopped early (what was measured is
kept, marked incomplete) or a command could not do its work; 2 a bad command
line or an invalid scenario (nothing ran).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newRunCmd(),
		newReproduceCmd(),
		newValidateCmd(),
		newReportCmd(),
		newRunExperimentCmd(),
		newCompareCmd(),
		newSwitchCmd(),
		newAgentCmd(),
		newAdversaryCmd(),
		newCertsCmd(),
		newControllerCmd(),
		newCleanCmd(),
		newDissectorCmd(),
		newCMCmd(),
		newVersionCmd(),
	)
	markUsageErrors(root)
	return root
}
