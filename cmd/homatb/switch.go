package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newSwitchCmd is replaced by the p4 work in progress.
func newSwitchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "switch",
		Short: "not built yet",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("homatb switch: not built yet")
		},
	}
}
