// Package preflight is the shape of a preflight's answer: each part of a
// run (switches, agents, external machines) checks what it needs and says
// what is missing as a Problem with its fix; testbed.Preflight gathers them
// into one Error, so one attempt shows them all.
package preflight

import (
	"errors"
	"strings"
)

// Problem is one preflight failure with the command that fixes it.
type Problem struct {
	What string
	Fix  string
}

// String is the problem and, when there is one, its fix.
func (p Problem) String() string {
	if p.Fix == "" {
		return p.What
	}
	return p.What + " (fix: " + p.Fix + ")"
}

// Error lists every problem found.
type Error struct{ Problems []Problem }

// Error is one line per problem under a heading.
func (e *Error) Error() string {
	lines := []string{"preflight failed:"}
	for _, p := range e.Problems {
		lines = append(lines, "  - "+p.String())
	}
	return strings.Join(lines, "\n")
}

// Is reports whether err is a preflight failure.
func Is(err error) bool {
	var pe *Error
	return errors.As(err, &pe)
}
