package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newAgentCmd is replaced by the hostagent work in progress.
func newAgentCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "agent",
		Short: "not built yet",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("homatb agent: not built yet")
		},
	}
}
