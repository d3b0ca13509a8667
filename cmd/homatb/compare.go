package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newCompareCmd is replaced by the reports work in progress.
func newCompareCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compare",
		Short: "not built yet",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("homatb compare: not built yet")
		},
	}
}
