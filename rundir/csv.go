package rundir

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// column is one column of a CSV format: its header name and the field of
// the row type it holds. Exactly one of the accessors is set.
type column[T any] struct {
	name string
	// optional columns may be absent from a file (written before the
	// column existed, or by hand); readers then leave the field zero.
	optional bool
	str      func(*T) *string
	i64      func(*T) *int64
	u64      func(*T) *uint64
	num      func(*T) *int
}

func strCol[T any](name string, f func(*T) *string) column[T] {
	return column[T]{name: name, str: f}
}

func i64Col[T any](name string, f func(*T) *int64) column[T] {
	return column[T]{name: name, i64: f}
}

func u64Col[T any](name string, f func(*T) *uint64) column[T] {
	return column[T]{name: name, u64: f}
}

func intCol[T any](name string, f func(*T) *int) column[T] {
	return column[T]{name: name, num: f}
}

// opt marks a column as one a file may lack.
func (c column[T]) opt() column[T] {
	c.optional = true
	return c
}

func (c *column[T]) parse(s string, v *T) error {
	var err error
	switch {
	case c.str != nil:
		*c.str(v) = s
	case s == "":
		// An empty number is zero: the field was not known when written.
	case c.i64 != nil:
		*c.i64(v), err = strconv.ParseInt(s, 10, 64)
	case c.u64 != nil:
		*c.u64(v), err = strconv.ParseUint(s, 10, 64)
	default:
		*c.num(v), err = strconv.Atoi(s)
	}
	if err != nil {
		return fmt.Errorf("column %s: %w", c.name, err)
	}
	return nil
}

// CSVFormat declares one CSV file of the run directory: its columns, in
// order, and the Go type of a row. Its Reader and Writer are the only code
// that turns rows into text and back, so writer and reader cannot drift.
type CSVFormat[T any] struct {
	// File is the file's name in the run directory.
	File    string
	columns []column[T]
	// prepare, when set, fills derived fields before a row is written.
	prepare func(*T)
}

// Header returns the column names in order.
func (f *CSVFormat[T]) Header() []string {
	h := make([]string, len(f.columns))
	for i, c := range f.columns {
		h[i] = c.name
	}
	return h
}

// CSVWriter writes rows of one format. It writes what encoding/csv's
// Writer writes, but appends each row's numbers and plain strings to one
// line buffer instead of formatting a string per field: a simulated
// collective writes two rows a message, millions a minute.
type CSVWriter[T any] struct {
	f    *CSVFormat[T]
	w    *bufio.Writer
	line []byte
	// quoted writes the fields that need quotes, as encoding/csv does.
	quoted *csv.Writer
	q      bytes.Buffer
}

// NewWriter returns a writer to w; with header it writes the header line
// first (leave it out when appending to a file that has one).
func (f *CSVFormat[T]) NewWriter(w io.Writer, header bool) (*CSVWriter[T], error) {
	cw := &CSVWriter[T]{f: f, w: bufio.NewWriter(w)}
	cw.quoted = csv.NewWriter(&cw.q)
	if header {
		for i, h := range f.Header() {
			if i > 0 {
				cw.line = append(cw.line, ',')
			}
			cw.field(h)
		}
		if err := cw.end(); err != nil {
			return nil, fmt.Errorf("%s header: %w", f.File, err)
		}
	}
	return cw, nil
}

// Write writes one row.
func (w *CSVWriter[T]) Write(v *T) error {
	if w.f.prepare != nil {
		w.f.prepare(v)
	}
	for i := range w.f.columns {
		c := &w.f.columns[i]
		if i > 0 {
			w.line = append(w.line, ',')
		}
		switch {
		case c.str != nil:
			w.field(*c.str(v))
		case c.i64 != nil:
			w.line = strconv.AppendInt(w.line, *c.i64(v), 10)
		case c.u64 != nil:
			w.line = strconv.AppendUint(w.line, *c.u64(v), 10)
		default:
			w.line = strconv.AppendInt(w.line, int64(*c.num(v)), 10)
		}
	}
	if err := w.end(); err != nil {
		return fmt.Errorf("%s: %w", w.f.File, err)
	}
	return nil
}

// field appends a string field, quoted as encoding/csv quotes it when it
// has to be.
func (w *CSVWriter[T]) field(s string) {
	if plainField(s) {
		w.line = append(w.line, s...)
		return
	}
	w.q.Reset()
	_ = w.quoted.Write([]string{s}) // into a bytes.Buffer: cannot fail
	w.quoted.Flush()
	w.line = append(w.line, bytes.TrimSuffix(w.q.Bytes(), []byte{'\n'})...)
}

// plainField says s needs no quotes: no comma, quote or line break, not
// the end-of-data marker, and not beginning with a space (an ASCII one;
// encoding/csv decides any other beginning).
func plainField(s string) bool {
	if s == `\.` {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', '"', '\r', '\n':
			return false
		}
	}
	if len(s) == 0 {
		return true
	}
	switch c := s[0]; {
	case c == ' ', c == '\t', c == '\v', c == '\f', c >= utf8.RuneSelf:
		return false
	}
	return true
}

// end ends the line and hands it to the buffered writer.
func (w *CSVWriter[T]) end() error {
	w.line = append(w.line, '\n')
	_, err := w.w.Write(w.line)
	w.line = w.line[:0]
	return err
}

// Flush writes out buffered rows.
func (w *CSVWriter[T]) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("%s: %w", w.f.File, err)
	}
	return nil
}

// CSVReader reads rows of one format, finding its columns by header name,
// so files whose columns are in another order, or that carry columns the
// format does not know, are read alike.
type CSVReader[T any] struct {
	f    *CSVFormat[T]
	cr   *csv.Reader
	name string
	// at[i] is the file's column holding the format's column i, -1 if absent.
	at    []int
	empty bool
}

// NewReader reads the header from r; name is what errors call the file. An
// empty input is no rows, not an error. A header that lacks a column the
// format has always had is an error naming the columns.
func (f *CSVFormat[T]) NewReader(r io.Reader, name string) (*CSVReader[T], error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	rd := &CSVReader[T]{f: f, cr: cr, name: name}
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		rd.empty = true
		return rd, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s header: %w", name, err)
	}
	header = slices.Clone(header)
	var missing []string
	for _, c := range f.columns {
		i := slices.Index(header, c.name)
		if i < 0 && !c.optional {
			missing = append(missing, c.name)
		}
		rd.at = append(rd.at, i)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: header lacks columns %v", name, missing)
	}
	cr.FieldsPerRecord = len(header)
	return rd, nil
}

// Empty reports whether the input had not even a header.
func (r *CSVReader[T]) Empty() bool { return r.empty }

// Read fills v with the next row, every field of v set (absent optional
// columns to zero). It returns io.EOF after the last row, and otherwise an
// error naming the file, line and column.
func (r *CSVReader[T]) Read(v *T) error {
	if r.empty {
		return io.EOF
	}
	rec, err := r.cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("read %s: %w", r.name, err)
	}
	var zero T
	*v = zero
	for i := range r.f.columns {
		if r.at[i] < 0 {
			continue
		}
		if err := r.f.columns[i].parse(rec[r.at[i]], v); err != nil {
			line, _ := r.cr.FieldPos(0)
			return fmt.Errorf("%s line %d: %w", r.name, line, err)
		}
	}
	return nil
}
