package scenario

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem in a scenario file: where it is and what was expected.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Field + ": " + e.Msg
}

// Errors is every problem found in one pass, in file order.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// unique drops repeated errors (same line, field and message), keeping the
// first of each, and puts the rest in line order.
func (es Errors) unique() Errors {
	seen := map[Error]bool{}
	var out Errors
	for _, e := range es {
		if !seen[*e] {
			seen[*e] = true
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	return out
}

// orNil returns nil for an empty list, so callers can return it as an error.
func (es Errors) orNil() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

var (
	yamlLineRe   = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	yamlDecodeRe = regexp.MustCompile("^cannot unmarshal !!(\\w+) `(.*)` into (.+)$")
)

// fromYAMLMessage turns one yaml.v3 message ("line 4: cannot unmarshal ...")
// into an Error, naming the field on that line and the expected type.
func fromYAMLMessage(file, msg string, idx lineIndex) *Error {
	e := &Error{File: file, Msg: msg}
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Msg = m[2]
		e.Field = idx.fieldAt(e.Line)
	}
	if m := yamlDecodeRe.FindStringSubmatch(e.Msg); m != nil {
		e.Msg = fmt.Sprintf("expected %s, got %s %q", describeGoType(m[3]), yamlTagName(m[1]), m[2])
	}
	return e
}

func yamlTagName(tag string) string {
	switch tag {
	case "str":
		return "the string"
	case "int":
		return "the integer"
	case "float":
		return "the number"
	case "bool":
		return "the boolean"
	case "seq":
		return "a list"
	case "map":
		return "a mapping"
	}
	return tag
}

// describeGoType names a Go type (as yaml.v3 prints it) the way a scenario
// author thinks of it.
func describeGoType(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.HasPrefix(t, "uint"):
		return "a non-negative integer"
	case strings.HasPrefix(t, "int"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	}
	return "a mapping"
}
