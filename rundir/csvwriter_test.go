package rundir

import (
	"bytes"
	"encoding/csv"
	"io"
	"strconv"
	"testing"
)

// encodingCSV is what encoding/csv writes for row v of f: the text
// CSVWriter must reproduce byte for byte.
func encodingCSV[T any](t testing.TB, f *CSVFormat[T], v *T) string {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	var fields []string
	for _, c := range f.columns {
		switch {
		case c.str != nil:
			fields = append(fields, *c.str(v))
		case c.i64 != nil:
			fields = append(fields, strconv.FormatInt(*c.i64(v), 10))
		case c.u64 != nil:
			fields = append(fields, strconv.FormatUint(*c.u64(v), 10))
		default:
			fields = append(fields, strconv.Itoa(*c.num(v)))
		}
	}
	if err := w.Write(fields); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return b.String()
}

// checkAsEncodingCSV writes a row with s in its string columns and numbers
// at their extremes, and compares it with encoding/csv's text.
func checkAsEncodingCSV(t testing.TB, s string) {
	t.Helper()
	f := RPCs()
	row := RPC{Experiment: s, Transport: s, Client: "h1", Server: s, Error: s, Reason: s, Collective: s,
		RPCID: ^uint64(0), ReqBytes: -1 << 63, RespBytes: 1<<63 - 1, Retries: 0}
	var b bytes.Buffer
	w, err := f.NewWriter(&b, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&row); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := encodingCSV(t, f, &row); b.String() != want {
		t.Fatalf("field %q: wrote\n%q\nwant encoding/csv's\n%q", s, b.String(), want)
	}
}

// TestCSVWriterAsEncodingCSV: the fields encoding/csv quotes, and those it
// does not, come out as it writes them.
func TestCSVWriterAsEncodingCSV(t *testing.T) {
	for _, s := range []string{"", "plain", "a,b", `say "hi"`, "\"", " lead", "\ttab", "\vv", "\ff", "trail ",
		"line\nbreak", "cr\rlf", "\r\n", `\.`, `\.x`, "é", "\u00a0nbsp", "\u0085next", "\u2003em", "x\u00a0", "homa: call 12 to 10.0.0.1:4000: timed out"} {
		checkAsEncodingCSV(t, s)
	}
	// The header too.
	var b, want bytes.Buffer
	w, err := RPCs().NewWriter(&b, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	cw := csv.NewWriter(&want)
	_ = cw.Write(RPCs().Header())
	cw.Flush()
	if b.String() != want.String() {
		t.Fatalf("header %q, want %q", b.String(), want.String())
	}
}

// FuzzCSVWriterAsEncodingCSV: any string field comes out as encoding/csv
// writes it.
func FuzzCSVWriterAsEncodingCSV(f *testing.F) {
	for _, s := range []string{"", "a,b", " x", "\"q\"", `\.`, "\u00a0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkAsEncodingCSV(t, s) })
}

// BenchmarkCSVWriteRPC writes a collective step's rpcs.csv row with
// CSVWriter and, as the baseline in the same run, with encoding/csv from
// strings formatted per field, as CSVWriter did before.
func BenchmarkCSVWriteRPC(b *testing.B) {
	f := RPCs()
	row := RPC{Experiment: "fat-tree-ring8192-homa", Transport: "homa", Phase: PhaseMeasure, Status: StatusCompleted,
		Client: "h17", ServerHost: "h18", Server: "10.0.1.2:4000", RPCID: 123456789, ReqBytes: 1000, RespBytes: 1,
		IntendedNs: 1765000000123456789, SentNs: 1765000000123456789, DoneNs: 1765000000123466789, RTTNs: 10000,
		Collective: "ring", Step: 517, InputNs: 1765000000123456000}
	b.Run("CSVWriter", func(b *testing.B) {
		w, err := f.NewWriter(io.Discard, false)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for range b.N {
			if err := w.Write(&row); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-csv", func(b *testing.B) {
		w := csv.NewWriter(io.Discard)
		fields := make([]string, 0, len(f.columns))
		b.ReportAllocs()
		for range b.N {
			fields = fields[:0]
			for _, c := range f.columns {
				switch {
				case c.str != nil:
					fields = append(fields, *c.str(&row))
				case c.i64 != nil:
					fields = append(fields, strconv.FormatInt(*c.i64(&row), 10))
				case c.u64 != nil:
					fields = append(fields, strconv.FormatUint(*c.u64(&row), 10))
				default:
					fields = append(fields, strconv.Itoa(*c.num(&row)))
				}
			}
			if err := w.Write(fields); err != nil {
				b.Fatal(err)
			}
		}
	})
}
