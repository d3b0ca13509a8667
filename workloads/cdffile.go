package workloads

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// cdfTolerance absorbs rounding in published tables (a last point of
// 0.99999 or 100.0001 still means "ends at 1").
const cdfTolerance = 1e-4

// readCDFFile reads a message-length CDF file: one point per line,
// "length<ws>cdf", lengths strictly increasing, cdf non-decreasing and ending
// at 1. It accepts the shared workload format (a header line
// "length_bytes<TAB>cdf", cdf in [0,1]) and the size-plus-percent format
// (cdf in [0,100], detected when the last value is 100). Lines starting
// with '#' and one non-numeric line before the first point (a header) are
// skipped. Sampling follows the reference tools: the first length whose
// cdf >= u, for u uniform in [0, 1).
func readCDFFile(path string) (*piecewise, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("size spec %q: %w", "file:"+path, err)
	}
	defer f.Close()
	d, err := parseCDF("file:"+path, f)
	if err != nil {
		return nil, fmt.Errorf("size spec %q: %w", "file:"+path, err)
	}
	return d, nil
}

type cdfPoint struct {
	length int
	cdf    float64
	line   int
}

func parseCDF(spec string, r io.Reader) (*piecewise, error) {
	var pts []cdfPoint
	headerSeen := false
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 2 {
			return nil, fmt.Errorf("line %d: want \"length cdf\", got %q", line, text)
		}
		length, errL := strconv.ParseFloat(fields[0], 64)
		c, errC := strconv.ParseFloat(fields[1], 64)
		if errL != nil || errC != nil {
			if len(pts) == 0 && !headerSeen {
				headerSeen = true
				continue // a header line
			}
			return nil, fmt.Errorf("line %d: want two numbers, got %q", line, text)
		}
		if length < 0 || length != math.Trunc(length) || length > math.MaxInt32 {
			return nil, fmt.Errorf("line %d: length %v is not a non-negative whole number of bytes", line, fields[0])
		}
		if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			return nil, fmt.Errorf("line %d: cdf %v: expected a fraction in [0, 1] or a percent in [0, 100]", line, fields[1])
		}
		pts = append(pts, cdfPoint{length: int(length), cdf: c, line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the CDF: %w", err)
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("no CDF points")
	}
	scale := 1.0
	if last := pts[len(pts)-1].cdf; last > 1+cdfTolerance {
		if math.Abs(last-100) > 100*cdfTolerance {
			return nil, fmt.Errorf("line %d: CDF ends at %v, want 1 (fractions) or 100 (percent)", pts[len(pts)-1].line, last)
		}
		scale = 100
	}
	segs := make([]segment, 0, len(pts))
	prevLen, prevCDF := -1, 0.0
	for _, p := range pts {
		c := p.cdf / scale
		if p.length <= prevLen {
			return nil, fmt.Errorf("line %d: length %d does not increase (previous %d): not a monotone CDF", p.line, p.length, prevLen)
		}
		if c < prevCDF {
			return nil, fmt.Errorf("line %d: cdf %v decreases (previous %v): not a monotone CDF", p.line, p.cdf, prevCDF*scale)
		}
		if c > 1+cdfTolerance {
			return nil, fmt.Errorf("line %d: cdf %v above %v", p.line, p.cdf, scale)
		}
		if c > prevCDF && p.length == 0 {
			return nil, fmt.Errorf("line %d: probability on length 0; messages need at least 1 byte", p.line)
		}
		segs = append(segs, segment{kind: segPoint, hi: p.length, p: c - prevCDF})
		prevLen, prevCDF = p.length, c
	}
	if math.Abs(prevCDF-1) > cdfTolerance {
		return nil, fmt.Errorf("CDF ends at %v, want 1 (or 100 percent)", prevCDF*scale)
	}
	return newPiecewise(spec, segs)
}
