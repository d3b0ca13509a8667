package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Source is a scenario file after the first stage: parsed, strictly decoded
// and defaulted, with the node tree kept so that later stages (validation,
// sweep expansion) can name lines.
type Source struct {
	File string
	data []byte
	root *yaml.Node
	idx  lineIndex
	// Raw is the decoded scenario, defaults applied, sweeps not applied.
	Raw *Scenario
}

// LoadFile reads and decodes a scenario file (stage one). It does not
// validate; use Load for the full check.
func LoadFile(path string) (*Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes scenario text; file is used in error messages only.
func Parse(file string, data []byte) (*Source, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, Errors{syntaxError(file, data, err)}
	}
	if len(root.Content) == 0 {
		return nil, Errors{{File: file, Line: 1, Msg: "empty scenario: expected a mapping with name, topology, transports and phases"}}
	}
	src := &Source{File: file, data: data, root: &root, idx: lineIndex{}}
	src.idx.build(root.Content[0], "")
	var errs Errors
	checkKnown(file, root.Content[0], reflect.TypeOf(Scenario{}), "", &errs)
	if len(errs) > 0 {
		return nil, errs
	}
	s, err := src.decode()
	if err != nil {
		return nil, err
	}
	src.Raw = s
	return src, nil
}

// decode decodes the file text into a fresh Scenario with defaults applied.
// Each sweep combination starts from such a fresh copy.
func (src *Source) decode() (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src.data))
	dec.KnownFields(true)
	s := &Scenario{}
	if err := dec.Decode(s); err != nil {
		return nil, src.yamlErrors(err)
	}
	return s, nil
}

// yamlErrors converts a yaml.v3 error into Errors with fields named.
func (src *Source) yamlErrors(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		out := make(Errors, 0, len(te.Errors))
		for _, m := range te.Errors {
			out = append(out, fromYAMLMessage(src.File, m, src.idx))
		}
		return out
	}
	return Errors{fromYAMLMessage(src.File, err.Error(), src.idx)}
}

// lineIndex maps canonical field paths ("phases[1].clients") to the line of
// their key, and back.
type lineIndex map[string]int

func (ix lineIndex) build(n *yaml.Node, path string) {
	if n == nil {
		return
	}
	if _, ok := ix[path]; !ok {
		ix[path] = n.Line
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			ix[p] = k.Line
			ix.build(v, p)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			ix.build(c, fmt.Sprintf("%s[%d]", path, i))
		}
	case yaml.DocumentNode, yaml.AliasNode:
		for _, c := range n.Content {
			ix.build(c, path)
		}
	}
}

// lineOf returns the line of path, or of its closest ancestor present in the
// file (a missing field is reported at its parent).
func (ix lineIndex) lineOf(path string) int {
	for p := path; ; {
		if l, ok := ix[p]; ok && p != "" {
			return l
		}
		cut := strings.LastIndexAny(p, ".[")
		if cut <= 0 {
			return 1
		}
		p = p[:cut]
	}
}

// fieldAt names the deepest field whose key is on line.
func (ix lineIndex) fieldAt(line int) string {
	best := ""
	for p, l := range ix {
		if l == line && len(p) > len(best) {
			best = p
		}
	}
	return best
}

func joinPath(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

// yamlFields lists a struct type's yaml keys and their field indexes.
func yamlFields(t reflect.Type) map[string]int {
	out := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name != "-" {
			out[name] = i
		}
	}
	return out
}

var (
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	nodeType        = reflect.TypeOf(yaml.Node{})
)

// checkKnown walks n against type t and reports unknown keys and
// mapping/list shape mismatches with their lines. yaml.v3's KnownFields does
// the same, but its message names the Go type rather than the field path and
// the keys that would have been accepted.
func checkKnown(file string, n *yaml.Node, t reflect.Type, path string, errs *Errors) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if t == nodeType || reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			*errs = append(*errs, &Error{File: file, Line: n.Line, Field: path, Msg: "expected a mapping of " + strings.Join(sortedKeys(yamlFields(t)), ", ")})
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			fi, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, &Error{File: file, Line: k.Line, Field: p,
					Msg: fmt.Sprintf("unknown field %q; expected one of: %s", k.Value, strings.Join(sortedKeys(fields), ", "))})
				continue
			}
			checkKnown(file, v, t.Field(fi).Type, p, errs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			*errs = append(*errs, &Error{File: file, Line: n.Line, Field: path, Msg: fmt.Sprintf("expected a list, got %q", n.Value)})
			return
		}
		for i, c := range n.Content {
			checkKnown(file, c, t.Elem(), path+"["+strconv.Itoa(i)+"]", errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			*errs = append(*errs, &Error{File: file, Line: n.Line, Field: path, Msg: fmt.Sprintf("expected a mapping, got %q", n.Value)})
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkKnown(file, n.Content[i+1], t.Elem(), joinPath(path, n.Content[i].Value), errs)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			*errs = append(*errs, &Error{File: file, Line: n.Line, Field: path, Msg: "expected " + describeGoType(t.String()) + ", got " + kindName(n.Kind)})
			return
		}
		if fractional(n, t) {
			*errs = append(*errs, &Error{File: file, Line: n.Line, Field: path, Msg: fmt.Sprintf("expected %s, got the number %s", describeGoType(t.String()), n.Value)})
		}
	}
}

// fractional reports whether scalar n, for a field of integer type t, is a
// number with a fractional part: yaml.v3 would truncate it (2.5 hosts
// become 2) where a whole number written as 1e6 or 4.0 is exact.
func fractional(n *yaml.Node, t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		return false
	}
	if n.ShortTag() != "!!float" {
		return false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	return err != nil || f != math.Trunc(f) || math.IsInf(f, 0)
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a value"
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
