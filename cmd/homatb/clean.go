package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newCleanCmd is replaced by the testbed work in progress.
func newCleanCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "clean",
		Short: "not built yet",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("homatb clean: not built yet")
		},
	}
}
