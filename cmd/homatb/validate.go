package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newValidateCmd is replaced by the testbed work in progress.
func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "not built yet",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("homatb validate: not built yet")
		},
	}
}
