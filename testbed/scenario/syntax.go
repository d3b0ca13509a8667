package scenario

import (
	"bytes"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// yaml.v3 reports a syntax error at the line of the construct it was
// reading (off by one for parser errors), which is often above the line
// at fault: an unclosed "[" on line 9 comes out as line 8, a tab on line
// 12 as line 11. syntaxError finds the line itself: the first line at
// which the text read so far stops parsing, and names the key on it and
// what YAML expected there.

// syntaxHints turns yaml.v3's syntax messages into what the author should
// write.
var syntaxHints = []struct {
	substr, hint string
}{
	{"did not find expected ',' or ']'", "a list opened with [ is not closed: expected ', ' between its items and ']' at its end"},
	{"did not find expected ',' or '}'", "a mapping opened with { is not closed: expected ', ' between its entries and '}' at its end"},
	{"tab character", "a tab in the indentation: YAML indents with spaces only"},
	{"found character that cannot start any token", "a character that cannot start a value here (a tab in the indentation, or an unquoted @ or `): indent with spaces and quote such values"},
	{"did not find expected key", "the indentation does not match the keys above: expected a key at the indentation of its siblings (or a value closed on the line before)"},
	{"did not find expected '-' indicator", "the indentation does not match the list above: expected a list item ('- ...') or a key at its siblings' indentation"},
	{"mapping values are not allowed in this context", "a ': ' where YAML expected a plain value: the line is indented deeper than the key above it, or a value holding ': ' needs quotes (\"a: b\")"},
	{"block sequence entries are not allowed in this context", "a list item ('- ') where a value was expected: start the list on the next line, indented under its key"},
	{"found unexpected end of stream", "a quoted string is not closed: expected its closing quote on the same line"},
	{"did not find expected node content", "a key without a value where one was expected: give the value or remove the line"},
}

var keyOnLineRe = regexp.MustCompile(`^\s*(?:-\s+)?([A-Za-z0-9_.-]+)\s*:`)

// syntaxError is the Error for text that does not parse as YAML.
func syntaxError(file string, data []byte, err error) *Error {
	e := fromYAMLMessage(file, err.Error(), nil)
	msg := e.Msg
	lines := bytes.SplitAfter(data, []byte("\n"))
	if l := firstFailingLine(lines, msg); l > 0 {
		e.Line = l
	}
	for _, h := range syntaxHints {
		if strings.Contains(msg, h.substr) {
			e.Msg = h.hint + " (YAML: " + msg + ")"
			break
		}
	}
	if e.Line > 0 && e.Line <= len(lines) {
		line := string(lines[e.Line-1])
		if i := strings.IndexFunc(line, func(r rune) bool { return r != ' ' }); i >= 0 && line[i] == '\t' && !strings.Contains(e.Msg, "tab") {
			e.Msg = "a tab in the indentation: YAML indents with spaces only (YAML: " + msg + ")"
		}
		if m := keyOnLineRe.FindStringSubmatch(strings.TrimLeft(line, "\t")); m != nil {
			e.Field = m[1]
		}
	}
	return e
}

// firstFailingLine returns the first n such that the first n lines fail
// to parse with the same message as the whole text (the problem is then
// on line n), or 0 when no prefix does.
func firstFailingLine(lines [][]byte, msg string) int {
	var prefix []byte
	for n, l := range lines {
		prefix = append(prefix, l...)
		var root yaml.Node
		err := yaml.Unmarshal(prefix, &root)
		if err == nil {
			continue
		}
		got := fromYAMLMessage("", err.Error(), nil).Msg
		if got == msg {
			return n + 1
		}
	}
	return 0
}
