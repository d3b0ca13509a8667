package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the command tree. Each subcommand lives in its own file
// and registers here, so there is no package-level state.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "homatb",
		Short:         "A testbed for datacenter transports: Homa vs TCP through P4 priority queues",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newRunCmd(),
		newValidateCmd(),
		newReportCmd(),
		newCompareCmd(),
		newSwitchCmd(),
		newAgentCmd(),
		newCertsCmd(),
		newControllerCmd(),
		newCleanCmd(),
		newVersionCmd(),
	)
	return root
}
