package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newReportCmd is replaced by the reports work in progress.
func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report",
		Short: "not built yet",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("homatb report: not built yet")
		},
	}
}
