package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and build information",
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, ok := debug.ReadBuildInfo()
			if !ok {
				fmt.Fprintln(cmd.OutOrStdout(), "homatb (unknown build)")
				return nil
			}
			rev := "unknown"
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					rev = s.Value
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "homatb %s (%s, commit %s)\n", info.Main.Version, info.GoVersion, rev)
			return nil
		},
	}
}
