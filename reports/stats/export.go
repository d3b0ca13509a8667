package stats

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// WriteFile creates path, lets fill write it through a buffer, and reports
// the first error of writing, flushing or closing.
func WriteFile(path string, fill func(w io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := fill(bw); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// FileStem makes an experiment name safe as a file name.
func FileStem(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
}

// writeSummary writes summary.json with its fractional numbers rounded
// to significant digits.
func writeSummary(path string, s *Summary) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	if b, err = roundJSON(b); err != nil {
		return err
	}
	return WriteFile(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// num formats an optional value for CSV and .data files ("nan" when absent,
// which Python's float() and numpy read).
func num(v *float64, prec int) string {
	if v == nil {
		return "nan"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

func writeBySizeCSV(path string, s *Summary) error {
	return WriteFile(path, func(w io.Writer) error {
		fmt.Fprintln(w, "experiment,transport,length,min_length,cum_frac,samples,"+
			"p50_us,p50_lo_us,p50_hi_us,p99_us,p99_lo_us,p99_hi_us,p999_us,p999_lo_us,p999_hi_us,"+
			"s50,s50_lo,s50_hi,s99,s99_lo,s99_hi,s999,s999_lo,s999_hi,"+
			"req_out_p50_us,req_out_p99_us,first_resp_p50_us,first_resp_p99_us")
		for _, e := range s.Experiments {
			for _, r := range e.BySize {
				p50, p99, p999 := r.P50us, r.P99us, r.P999us
				_, err := fmt.Fprintf(w, "%s,%s,%d,%d,%.6f,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
					csvField(e.Name), csvField(e.Transport), r.Length, r.MinLength, r.CumFrac, r.Samples,
					num(&p50, 3), num(r.P50CI[0], 3), num(r.P50CI[1], 3),
					num(&p99, 3), num(r.P99CI[0], 3), num(r.P99CI[1], 3),
					num(&p999, 3), num(r.P999CI[0], 3), num(r.P999CI[1], 3),
					num(r.S50, 4), num(r.S50CI[0], 4), num(r.S50CI[1], 4),
					num(r.S99, 4), num(r.S99CI[0], 4), num(r.S99CI[1], 4),
					num(r.S999, 4), num(r.S999CI[0], 4), num(r.S999CI[1], 4),
					num(r.ReqOutP50us, 3), num(r.ReqOutP99us, 3), num(r.FirstRespP50us, 3), num(r.FirstRespP99us, 3))
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// csvField quotes a field when CSV needs it.
func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// WriteOutputs writes the exports of an analysis's aggregates into dir
// (each experiment's raw exports were written as it was analysed:
// writeRawExports).
func WriteOutputs(dir string, a *Analysis) error {
	if err := writeSummary(filepath.Join(dir, "summary.json"), a.Sum); err != nil {
		return err
	}
	if err := writeBySizeCSV(filepath.Join(dir, "by_size.csv"), a.Sum); err != nil {
		return err
	}
	for i := range a.Sum.Experiments {
		e := &a.Sum.Experiments[i]
		stem := FileStem(e.Name)
		if err := writeCperfData(filepath.Join(dir, stem+".data"), e); err != nil {
			return err
		}
		if len(e.CCDF) > 0 {
			if err := writeCCDF(filepath.Join(dir, stem+"_cdf.data"), e); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeRawExports writes the exports of one experiment's raw records into
// dir: its clients' RTT files (cperf/) and its HdrHistogram (hist, nil
// without samples).
func writeRawExports(dir string, e *Experiment, hist *hdrhistogram.Histogram) error {
	if err := writeRTTs(dir, e); err != nil {
		return err
	}
	if hist == nil {
		return nil
	}
	return WriteFile(filepath.Join(dir, FileStem(e.Name)+".hgrm"), func(w io.Writer) error {
		// Values in µs; 5 ticks per half distance as HdrHistogram's tools do.
		_, err := hist.PercentilesPrint(w, 5, 1000)
		return err
	})
}
