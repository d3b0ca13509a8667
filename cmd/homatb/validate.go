package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/homatb/homatb/testbed/scenario"
)

// newValidateCmd checks scenario files without running them: every error
// names the file, line and field and says what was expected.
func newValidateCmd() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "validate SCENARIO.yaml...",
		Short: "Check scenario files without running them",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var failed []string
			for _, f := range args {
				plan, err := scenario.Load(f, scenario.Options{})
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					failed = append(failed, f)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok, %d experiments\n", f, len(plan.Experiments))
				for _, w := range plan.Warnings() {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", f, w)
				}
				if verbose {
					if err := plan.Describe(cmd.OutOrStdout()); err != nil {
						return err
					}
				}
			}
			if len(failed) > 0 {
				return errors.New("invalid scenario(s): " + fmt.Sprint(failed))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print the expanded plan")
	return cmd
}
