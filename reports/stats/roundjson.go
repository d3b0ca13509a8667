package stats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// significant is how many significant digits summary.json keeps of a
// fractional number: enough for any statistic here (a µs value below
// 10 s keeps its ns), few enough that 466.323 does not print as
// 466.32300000000004.
const significant = 10

// roundJSON rewrites the fractional numbers of a JSON document to
// significant digits, leaving everything else, key order included, as it
// was.
func roundJSON(in []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var out bytes.Buffer
	type level struct {
		object bool
		n      int // tokens written in this container
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("round json: %w", err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out.WriteByte(byte(d))
			continue
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			switch {
			case top.object && top.n%2 == 1:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(v))
			stack = append(stack, level{object: v == '{'})
		case json.Number:
			out.WriteString(roundNumber(string(v)))
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("round json: %w", err)
			}
			out.Write(b)
		}
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, out.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("round json: %w", err)
	}
	ind.WriteByte('\n')
	return ind.Bytes(), nil
}

// roundNumber rounds a fractional JSON number to significant digits and
// writes it without an exponent; integers are left alone.
func roundNumber(s string) string {
	if !bytes.ContainsAny([]byte(s), ".eE") {
		return s
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', significant, 64), 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
