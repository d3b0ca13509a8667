package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homatb/homatb/testbed/scenario"
)

// Exit codes of homatb (`homatb --help` and the README).
const (
	exitOK = 0
	// exitFailed: a run failed or stopped early (what was measured is
	// kept, marked incomplete), or another command could not do its work.
	exitFailed = 1
	// exitUsage: bad command line or an invalid scenario; nothing ran.
	exitUsage = 2
)

// usageError is a command line or input homatb refuses before doing
// anything: it exits with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode maps the error a command returned to homatb's exit code.
func exitCode(err error) int {
	var ue usageError
	var se scenario.Errors
	var e *scenario.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.As(err, &se), errors.As(err, &e):
		return exitUsage
	}
	return exitFailed
}

// markUsageErrors makes every argument-count and flag error of cmd and its
// subcommands a usageError, and an unknown subcommand too.
func markUsageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return usageError{fmt.Errorf("%w; see homatb %s --help", err, cmd.Name())}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	// Without Args cobra reports an unknown subcommand as a plain error;
	// with them the root runs, and says so itself.
	root.Args = cobra.ArbitraryArgs
	root.SuggestionsMinimumDistance = 2
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q", args[0])
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usagef("%s; see homatb --help", msg)
	}
}

// flagUsagesWithBackticks lists the flags of cmd and its subcommands whose
// usage holds a backtick, which pflag takes for the name of the flag's
// value ("--tls-cert homatb certs") rather than printing it.
func flagUsagesWithBackticks(root *cobra.Command) []string {
	var out []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				out = append(out, c.CommandPath()+" --"+f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}
