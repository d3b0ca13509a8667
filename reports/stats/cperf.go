package stats

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// HomaModule's cperf scripts digest the RTT files cp_node dumps. homatb
// writes the same files, so cperf's readers and plots work on a homatb run:
//   - cperf/<experiment>-<client>.rtts: cp_node's dump_times format, '#'
//     comment lines, then "<request length> <RTT in µs>" per completed
//     measured RPC;
//   - <experiment>.data: the digest cperf computes from them, one row per
//     distinct request length with the percentiles cperf takes (the values
//     at sorted index n/2, 99n/100 and 999n/1000), which differ from
//     summary.json's nearest-rank percentiles by at most one sample;
//   - <experiment>_cdf.data: the short-message CCDF, columns "usec frac".

// CperfDir is the folder of a run directory that holds the .rtts files.
const CperfDir = "cperf"

// cperfRow is one length of a cperf digest; RTTs in µs.
type cperfRow struct {
	length         int64
	cumFrac        float64
	samples        int
	p50, p99, p999 float64
	s50, s99, s999 float64
	hasSlow        bool
}

// cperfDigest digests samples sorted by length, then RTT; slows, when not
// nil, are their slowdowns in the same order.
func cperfDigest(s []sample, slows []float64) []cperfRow {
	var out []cperfRow
	var buf []float64
	for lo := 0; lo < len(s); {
		hi := lo + 1
		for hi < len(s) && s[hi].length == s[lo].length {
			hi++
		}
		n := hi - lo
		at := func(num int) int { return lo + n*num/1000 }
		r := cperfRow{length: s[lo].length, cumFrac: float64(hi) / float64(len(s)), samples: n,
			p50: float64(s[at(500)].rtt) / 1e3, p99: float64(s[at(990)].rtt) / 1e3, p999: float64(s[at(999)].rtt) / 1e3}
		if slows != nil {
			buf = append(buf[:0], slows[lo:hi]...)
			slices.Sort(buf)
			r.s50, r.s99, r.s999, r.hasSlow = buf[n*500/1000], buf[n*990/1000], buf[n*999/1000], true
		}
		out = append(out, r)
		lo = hi
	}
	return out
}

// writeCperfData writes the digest as cperf does: whitespace-separated
// columns named by the last comment line.
func writeCperfData(path string, e *Experiment) error {
	return WriteFile(path, func(w io.Writer) error {
		fmt.Fprintf(w, "# Digested data for %s experiment (%s), %d completed RPCs; RTTs in usec, slowdown against the ideal RTT\n",
			e.Name, e.Transport, e.RPCs.Completed)
		fmt.Fprintln(w, "# length  cum_frac  samples     p50      p99     p999   s50    s99    s999")
		for _, r := range e.digest {
			s50, s99, s999 := "nan", "nan", "nan"
			if r.hasSlow {
				s50, s99, s999 = strconv.FormatFloat(r.s50, 'f', 1, 64), strconv.FormatFloat(r.s99, 'f', 1, 64), strconv.FormatFloat(r.s999, 'f', 1, 64)
			}
			if _, err := fmt.Fprintf(w, " %7d %9.6f %8d %7.1f %8.1f %8.1f %5s %6s %7s\n",
				r.length, r.cumFrac, r.samples, r.p50, r.p99, r.p999, s50, s99, s999); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeCCDF writes the short-message CCDF with cperf's column names.
func writeCCDF(path string, e *Experiment) error {
	return WriteFile(path, func(w io.Writer) error {
		fmt.Fprintf(w, "# Fraction of RTTs longer than a given time for %s experiment\n", e.Name)
		fmt.Fprintf(w, "# Includes messages <= %d bytes (%d RPCs)\n", e.Short.MaxLength, e.Short.Count)
		fmt.Fprintln(w, "#       usec        frac")
		for _, p := range e.CCDF {
			if _, err := fmt.Fprintf(w, "%12.3f  %.8f\n", p.X, p.Y); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeRTTs writes one cp_node-style .rtts file per client host of the
// experiment into dir/cperf.
func writeRTTs(dir string, e *Experiment) error {
	if len(e.samples) == 0 {
		return nil
	}
	d := filepath.Join(dir, CperfDir)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", d, err)
	}
	for ci, client := range e.clients {
		path := filepath.Join(d, FileStem(e.Name)+"-"+FileStem(client)+".rtts")
		err := WriteFile(path, func(w io.Writer) error {
			fmt.Fprintf(w, "# RTTs of the completed measured RPCs of experiment %s from client %s\n", e.Name, client)
			fmt.Fprintln(w, "# length rtt_usec")
			buf := make([]byte, 0, 64)
			for _, x := range e.samples {
				if int(x.client) != ci {
					continue
				}
				buf = strconv.AppendInt(buf[:0], x.length, 10)
				buf = append(buf, ' ')
				buf = strconv.AppendFloat(buf, float64(x.rtt)/1e3, 'f', 3, 64)
				buf = append(buf, '\n')
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
