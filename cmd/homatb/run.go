package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newRunCmd is replaced by the testbed work in progress.
func newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "not built yet",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("homatb run: not built yet")
		},
	}
}
