package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newControllerCmd is replaced by the controller work in progress.
func newControllerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "controller",
		Short: "not built yet",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("homatb controller: not built yet")
		},
	}
}
