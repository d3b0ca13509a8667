package workloads

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sharedWorkloads finds ../shared/workloads (HOMATB_SHARED overrides) by
// walking up from the package directory, and skips the test when absent.
func sharedWorkloads(t *testing.T) string {
	t.Helper()
	if env := os.Getenv("HOMATB_SHARED"); env != "" {
		return filepath.Join(env, "workloads")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		cand := filepath.Join(dir, "shared", "workloads")
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			return cand
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no shared/workloads folder above the repository (set HOMATB_SHARED): skipping")
		}
		dir = parent
	}
}

func mustParse(t *testing.T, spec string) SizeDist {
	t.Helper()
	d, err := ParseSizeSpec(spec)
	if err != nil {
		t.Fatalf("ParseSizeSpec(%q): %v", spec, err)
	}
	return d
}

// TestSampleMeanMatchesExactMean draws 10^6 samples per spec and checks
// their mean against the exact mean, within four standard errors of the
// sample mean: for heavy tails (W3's 0.1% of messages near 1 MB) one
// standard error at 10^6 samples is close to 1% by itself, so a fixed 1%
// would fail for an unlucky seed rather than for a wrong mean.
func TestSampleMeanMatchesExactMean(t *testing.T) {
	const n = 1_000_000
	cdf := filepath.Join(t.TempDir(), "pct.txt")
	if err := os.WriteFile(cdf, []byte("# size percent\n64 10\n500 45\n4000 80\n60000 97\n700000 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	specs := []string{
		"w1", "w2", "w3", "w4", "w5",
		"fixed:100", "uniform:1:1000", "uniform:500:501", "loguniform:8:1000000",
		"loguniform:1:2", "mix:fixed:100@0.9,w4@0.1", "w5,max=100000", "w4,max=1K",
		"loguniform:10:100000,max=5000", "uniform:1:100,max=50",
		"file:" + cdf, "file:" + cdf + ",max=5000",
	}
	for i, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			d := mustParse(t, spec)
			r := rand.New(rand.NewPCG(uint64(i), 42))
			var sum, sumSq float64
			for range n {
				x := d.Sample(r)
				if x < d.Min() || x > d.Max() {
					t.Fatalf("sample %d outside [%d, %d]", x, d.Min(), d.Max())
				}
				sum += float64(x)
				sumSq += float64(x) * float64(x)
			}
			got := sum / n
			se := math.Sqrt(max(sumSq/n-got*got, 0) / n)
			if diff := math.Abs(got - d.Mean()); diff > 4*se {
				t.Errorf("sample mean %.2f over %d samples, exact mean %.2f: %.1f standard errors (%.3f%%) apart, limit 4", got, n, d.Mean(), diff/se, 100*diff/d.Mean())
			}
		})
	}
}

// TestMeanIsExact checks the closed-form means against the definition
// E[L] = sum_{x>=0} P(L > x), summed over every integer.
func TestMeanIsExact(t *testing.T) {
	for _, spec := range []string{
		"loguniform:1:5000", "loguniform:7:8", "uniform:3:900", "w1", "w3,max=20000",
		"w4,max=30000", "mix:loguniform:2:50@1,fixed:77@3", "loguniform:100:10000,max=777",
	} {
		t.Run(spec, func(t *testing.T) {
			d := mustParse(t, spec)
			var want float64
			for x := 0; x < d.Max(); x++ {
				want += 1 - d.CDF(x)
			}
			if math.Abs(want-d.Mean()) > 1e-6*want {
				t.Errorf("Mean() = %.9f, sum of survival function = %.9f", d.Mean(), want)
			}
			if d.CDF(d.Max()) != 1 || d.CDF(d.Min()-1) != 0 {
				t.Errorf("CDF(Max)=%v CDF(Min-1)=%v, want 1 and 0", d.CDF(d.Max()), d.CDF(d.Min()-1))
			}
		})
	}
}

// publishedTruncatedMean is each table's mean with lengths above 1 MB
// taken as 1 MB, as the Homa papers and data/README.md state it.
func publishedTruncatedMean() map[string]float64 {
	return map[string]float64{"w1": 189, "w2": 433, "w3": 2_423, "w4": 60_200, "w5": 385_000}
}

// TestBuiltinsAreThePublishedTables: each built-in, untruncated, has the
// shared table's CDF at every one of its points, and truncated at 1 MB
// (the default) the published mean.
func TestBuiltinsAreThePublishedTables(t *testing.T) {
	dir := sharedWorkloads(t)
	for name, pub := range publishedTruncatedMean() {
		t.Run(name, func(t *testing.T) {
			full := mustParse(t, name+",max=100MB")
			table := mustParse(t, "file:"+filepath.Join(dir, name+".tsv"))
			points := tablePoints(t, filepath.Join(dir, name+".tsv"))
			if ks := ksDistance(full, table, points); ks != 0 || full.Min() != table.Min() || full.Max() != table.Max() {
				t.Errorf("built-in %s differs from %s.tsv: KS %g, range [%d, %d] vs [%d, %d]", name, name, ks, full.Min(), full.Max(), table.Min(), table.Max())
			}
			d := mustParse(t, name)
			if d.Max() > HomaMaxMessage {
				t.Errorf("%s: longest %d, want the default truncation at %d", name, d.Max(), HomaMaxMessage)
			}
			// The published means are rounded to three or four digits.
			if rel := math.Abs(d.Mean()-pub) / pub; rel > 0.005 {
				t.Errorf("%s truncated at 1 MB: mean %.1f, published %.0f", name, d.Mean(), pub)
			}
		})
	}
}

// tablePoints reads the lengths of a CDF table.
func tablePoints(t *testing.T, path string) []int {
	t.Helper()
	f, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var points []int
	for _, line := range strings.Split(string(f), "\n") {
		var l int
		var c float64
		if _, err := fmt.Sscan(line, &l, &c); err == nil {
			points = append(points, l)
		}
	}
	return points
}

// ksDistance is sup_x |F(x) - G(x)| for integer-valued distributions,
// evaluated at every point where either could jump.
func ksDistance(a, b SizeDist, points []int) float64 {
	var ks float64
	for _, x := range points {
		for _, y := range []int{x - 1, x} {
			ks = max(ks, math.Abs(a.CDF(y)-b.CDF(y)))
		}
	}
	return ks
}

// TestW4SampledMatchesTable samples the built-in W4 a million times, whole
// and truncated at 1 MB, and measures the Kolmogorov–Smirnov distance of
// the samples from the published table (truncated alike): the sampler, not
// only the table, must follow the data.
func TestW4SampledMatchesTable(t *testing.T) {
	const (
		n     = 1_000_000
		bound = 0.005
	)
	points := tablePoints(t, "data/w4.tsv")
	for _, tc := range []struct{ spec, table string }{
		{"w4,max=10MB", "file:data/w4.tsv"},
		{"w4", "file:data/w4.tsv,max=1000000"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			d, table := mustParse(t, tc.spec), mustParse(t, tc.table)
			counts := map[int]int{}
			r := rand.New(rand.NewPCG(4, 2026))
			for range n {
				counts[d.Sample(r)]++
			}
			// The samples' CDF jumps only at the table's lengths (and 1 MB).
			lengths := append(slices.Clone(points), HomaMaxMessage)
			slices.Sort(lengths)
			var cum, ks float64
			for _, x := range slices.Compact(lengths) {
				cum += float64(counts[x]) / n
				delete(counts, x)
				ks = max(ks, math.Abs(cum-table.CDF(x)))
			}
			if len(counts) > 0 {
				t.Errorf("samples at lengths outside the table: %v", counts)
			}
			t.Logf("KS distance of %d samples of %s from %s: %.5f", n, tc.spec, tc.table, ks)
			if ks >= bound {
				t.Errorf("KS distance %.5f, want below %g", ks, bound)
			}
		})
	}
}

// fixedSource makes rand.Float64 return u (a multiple of 2^-53).
type fixedSource struct{ u float64 }

func (s fixedSource) Uint64() uint64 { return uint64(s.u * (1 << 53)) }

// TestSampleRule: u on a CDF point takes that point's length, as the
// Homa tools' "first length whose cdf >= u" does.
func TestSampleRule(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.tsv")
	if err := os.WriteFile(path, []byte("length_bytes\tcdf\n10\t0.25\n20\t0.5\n30\t1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := mustParse(t, "file:"+path)
	for _, tc := range []struct {
		u    float64
		want int
	}{{0, 10}, {0.125, 10}, {0.25, 10}, {0.25 + 1.0/(1<<53), 20}, {0.5, 20}, {0.75, 30}, {1 - 1.0/(1<<53), 30}} {
		if got := d.Sample(rand.New(fixedSource{tc.u})); got != tc.want {
			t.Errorf("u = %v: length %d, want %d", tc.u, got, tc.want)
		}
	}
}

func TestPercentFormatEqualsFractions(t *testing.T) {
	dir := t.TempDir()
	frac := filepath.Join(dir, "frac.txt")
	pct := filepath.Join(dir, "pct.txt")
	if err := os.WriteFile(frac, []byte("length_bytes\tcdf\n10\t0.25\n200\t0.5\n3000\t1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pct, []byte("# size percent\n10 25\n200 50\n3000 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := mustParse(t, "file:"+frac), mustParse(t, "file:"+pct)
	if a.Mean() != b.Mean() || ksDistance(a, b, []int{10, 200, 3000}) != 0 {
		t.Errorf("percent file differs: means %v vs %v", a.Mean(), b.Mean())
	}
	if want := 0.25*10 + 0.25*200 + 0.5*3000; a.Mean() != want {
		t.Errorf("step-CDF mean %v, want %v", a.Mean(), want)
	}
}

func TestBadSizeSpecs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unreadable := write("unreadable", "10 1\n")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec, want string
	}{
		{"", "empty"},
		{"w6", "unknown kind"},
		{"fixed:0", "not a positive length"},
		{"fixed:-5", "not a positive length"},
		{"uniform:10:5", "above B"},
		{"uniform:10", "expected two lengths"},
		{"loguniform:0:10", "not a positive length"},
		{"mix:w1@-1,w2@1", "not a non-negative number"},
		{"mix:w1", "expected SPEC@WEIGHT"},
		{"mix:w1@0", "sum to zero"},
		{"w1,max=0", "max=0"},
		{"file:" + filepath.Join(dir, "absent"), "no such file"},
		{"file:" + write("lengths", "10 0.5\n10 1\n"), "not a monotone CDF"},
		{"file:" + write("cdfdown", "10 0.5\n20 0.4\n30 1\n"), "not a monotone CDF"},
		{"file:" + write("short", "10 0.5\n20 0.9\n"), "ends at 0.9"},
		{"file:" + write("garbage", "10 0.5\nabc def\n"), "line 2"},
		{"file:" + write("empty", "length cdf\n"), "no CDF points"},
		{"file:" + write("zero", "0 0.5\n10 1\n"), "length 0"},
		{"file:" + write("nan", "10 0.5\n20 nan\n30 1\n"), "line 2: cdf nan: expected a fraction"},
		{"file:" + write("negcdf", "10 -0.5\n20 1\n"), "line 1: cdf -0.5: expected a fraction"},
		{"file:" + write("pct", "10 50\n20 120\n"), "ends at 120"},
		// A folder cannot be read as a file, even by root.
		{"file:" + dir, "is a directory"},
	}
	if os.Geteuid() != 0 {
		// Root reads any file, so only an unprivileged run can check this.
		tests = append(tests, struct{ spec, want string }{"file:" + unreadable, "permission denied"})
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := ParseSizeSpec(tc.spec)
			if err == nil {
				t.Fatalf("ParseSizeSpec(%q) succeeded, want an error containing %q", tc.spec, tc.want)
			}
			// One error, on one line, naming the spec once.
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Count(msg, "size spec") != 1 || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming the spec once and containing %q", msg, tc.want)
			}
		})
	}
}

func TestResolveFiles(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"file:w.tsv", "file:/sc/w.tsv"},
		{"file:../w.tsv,max=1000", "file:/w.tsv,max=1000"},
		{"file:/abs/w.tsv", "file:/abs/w.tsv"},
		{"mix:file:a.tsv@0.5,w4@0.5", "mix:file:/sc/a.tsv@0.5,w4@0.5"},
		{"w4,max=10MB", "w4,max=10MB"},
		{"fixed:100", "fixed:100"},
		{"file:", "file:"},
	} {
		if got := ResolveFiles(tc.spec, "/sc"); got != tc.want {
			t.Errorf("ResolveFiles(%q) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

// TestMeanPackets checks MeanPackets against the mean packet count of a
// million samples (within four standard errors), and exactly for fixed
// sizes at packet boundaries.
func TestMeanPackets(t *testing.T) {
	const payload, n = 1424, 1_000_000
	for _, tt := range []struct {
		spec string
		want float64 // exact, or 0 to sample
	}{
		{"fixed:1", 1}, {"fixed:1424", 1}, {"fixed:1425", 2}, {"fixed:2848", 2},
		{"w1", 0}, {"w2", 0}, {"w4,max=1000000", 0}, {"uniform:1:10000", 0},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			d := mustParse(t, tt.spec)
			got := MeanPackets(d, payload)
			if tt.want != 0 {
				if got != tt.want {
					t.Errorf("MeanPackets = %g, want %g", got, tt.want)
				}
				return
			}
			r := rand.New(rand.NewPCG(7, 11))
			var sum, sumSq float64
			for range n {
				k := float64((d.Sample(r) + payload - 1) / payload)
				sum += k
				sumSq += k * k
			}
			mean := sum / n
			se := math.Sqrt(max(sumSq/n-mean*mean, 0) / n)
			if math.Abs(got-mean) > 4*se+1e-9 {
				t.Errorf("MeanPackets = %.4f, sampled %.4f (standard error %.4f)", got, mean, se)
			}
		})
	}
}

// TestWholeBuiltin: a bare built-in that the 1 MB cut would shorten gets
// its own longest length as its limit, and parses to the whole table;
// other specs are left to the caller.
func TestWholeBuiltin(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
	}{
		{"w5", "w5,max=29400000"},
		{" W4 ", "W4,max=10000000"},
		{"w2", "w2,max=3529904"},
		{"w1", ""},             // 100 KB at most: the cut changes nothing
		{"w5,max=1000000", ""}, // a limit given is kept
		{"fixed:2000000", ""},  // not a built-in
		{"mix:w5@1,w1@1", ""},  // a mixture is parsed as written
		{"w5,max=bad", ""},     // ParseSizeSpec reports it
	} {
		got, ok := WholeBuiltin(tc.spec)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("WholeBuiltin(%q) = %q, %v; want %q", tc.spec, got, ok, tc.want)
			continue
		}
		if !ok {
			continue
		}
		whole, err := ParseSizeSpec(got)
		if err != nil {
			t.Fatal(err)
		}
		cut, err := ParseSizeSpec(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if whole.Max() <= HomaMaxMessage || cut.Max() != HomaMaxMessage || whole.Mean() <= cut.Mean() {
			t.Errorf("%s: whole max %d mean %.0f, cut max %d mean %.0f", tc.spec, whole.Max(), whole.Mean(), cut.Max(), cut.Mean())
		}
	}
}

// TestBuiltinOf: the built-in a spec names, lower case, whatever its limit.
func TestBuiltinOf(t *testing.T) {
	for spec, want := range map[string]string{"W3,max=30MB": "w3", " w5 ": "w5", "fixed:1000": "", "mix:w5@1,w1@1": "", "w2,max=bad": ""} {
		if got, ok := BuiltinOf(spec); got != want || ok != (want != "") {
			t.Errorf("BuiltinOf(%q) = %q, %v; want %q", spec, got, ok, want)
		}
	}
}
