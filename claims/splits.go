package claims

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/homatb/homatb/queuemodel"
)

// ArticleSplit is the level split homatb reads the article's
// priority-level claims (A6-A9) with, chosen from SplitCandidates on A7
// and A8 (the one figure whose single level shows the discipline within
// a level: PS's 21.4, where FIFO would give FCFS's thousands) and checked
// on A6 and A9: docs/claims.md, "Which level split", and `homatb
// reproduce --splits` for every candidate's values.
var ArticleSplit = queuemodel.Policy{Kind: queuemodel.Priority, Within: queuemodel.PS, Split: queuemodel.LogSpaced, Lo: 1000, Hi: 1.6e6}

// SplitCandidate is one reading of how the article split message sizes
// into priority levels; Policy has no Levels (each claim sets them).
type SplitCandidate struct {
	Name   string
	Policy queuemodel.Policy
}

// SplitCandidates are the readings of the article's level split homatb
// measures: log-spaced cuts between several bounds, equal shares of the
// messages and of the bytes, each with PS and with FIFO within a level.
func SplitCandidates() []SplitCandidate {
	type cut struct {
		name   string
		split  queuemodel.Split
		lo, hi float64
	}
	cuts := []cut{
		{"log-spaced, the workload's smallest to largest message", queuemodel.LogSpaced, 0, 0},
		{"log-spaced, the workload's smallest message to 10 MB (W4's table before truncation)", queuemodel.LogSpaced, 0, 1e7},
		{"log-spaced, 1 B to 1 MB", queuemodel.LogSpaced, 1, 1e6},
		{"log-spaced, 100 B to 1 MB (4 levels: 1, 10, 100 KB)", queuemodel.LogSpaced, 100, 1e6},
		{"log-spaced, 1 KB to 1.6 MB (fitted on A7 and A8)", queuemodel.LogSpaced, 1000, 1.6e6},
		{"equal shares of messages", queuemodel.EqualMessages, 0, 0},
		{"equal shares of bytes", queuemodel.EqualBytes, 0, 0},
	}
	var out []SplitCandidate
	for _, c := range cuts {
		for _, w := range []queuemodel.Kind{queuemodel.PS, queuemodel.FCFS} {
			out = append(out, SplitCandidate{Name: c.name, Policy: queuemodel.Policy{Kind: queuemodel.Priority, Within: w, Split: c.split, Lo: c.lo, Hi: c.hi}})
		}
	}
	return out
}

// withLevels is split with k levels.
func withLevels(split queuemodel.Policy, k int) queuemodel.Policy {
	split.Kind, split.Levels = queuemodel.Priority, k
	return split
}

// levelClaims are the article's priority-level claims (A6, A7, A8, A9)
// measured with split.
func levelClaims(split queuemodel.Policy) []Claim {
	w4 := ArticleWorkload
	l := func(k int) queuemodel.Policy { return withLevels(split, k) }
	var a9 []slowdownQuery
	var a9p []Point
	for _, w := range []string{"w1", "w2", "w3", "w4", "w5"} {
		a9 = append(a9, p99(w, 0.8, ps, 0, 0.5), p99(w, 0.8, srpt, 0, 0.5), p99(w, 0.8, l(8), 0, 0.5))
		a9p = append(a9p, band(w+" PS", 21, 26, 0.1), band(w+" SRPT", 1.0, 2.0, 0.1), band(w+" 8 levels", 1.0, 2.5, 0.1))
	}
	a6 := func(q *queueRuns, seed uint64) ([]float64, error) {
		v, err := queries(p99(w4, 0.5, l(8), 0, 1), p99(w4, 0.5, srpt, 0, 1), p99(w4, 0.7, l(8), 0, 1), p99(w4, 0.7, srpt, 0, 1))(q, seed)
		if err != nil {
			return nil, err
		}
		return []float64{v[0] / v[1], v[2], v[3]}, nil
	}
	return []Claim{
		{ID: "A6", Text: "8 log-spaced levels against SRPT (P99, all messages)", Published: "within ~15% up to 50-60% load; 3.7x vs 2.9x at 70%",
			Source: srcArticle, Mode: ModeQueue, Tolerance: "ratio <= 1.15 at 50%; 10% at 70%",
			Points: []Point{band("8 levels/SRPT at 50%", 0, 1.15, 0), near("8 levels 70%", 3.7, 0.1), near("SRPT 70%", 2.9, 0.1)},
			queue:  a6, ordering: func(m []float64) bool { return m[1] >= m[2] },
			Cause: "with PS within a level no candidate split brings 8 levels within 15% of SRPT at 50% load (1.24-1.90 over the candidates, 1.24 with this split); FIFO within does with log-spaced cuts from W4's smallest message to 10 MB (1.14, and 3.40 at 70%), but FIFO makes the single level of A7 and A8 FCFS (21,623 against the article's 21.4), so the figures do not share a discipline within a level (`homatb reproduce --splits`)"},
		{ID: "A7", Text: "80% load, P99 slowdown of the shortest half with k levels", Published: "1 level 21.4x, 2 levels 2.0x, 4 levels 1.05x",
			Source: srcArticle, Mode: ModeQueue, Tolerance: "10%",
			Points:   []Point{near("1 level", 21.4, 0.1), near("2 levels", 2.0, 0.1), near("4 levels", 1.05, 0.1)},
			queue:    queries(p99(w4, 0.8, l(1), 0, 0.5), p99(w4, 0.8, l(2), 0, 0.5), p99(w4, 0.8, l(4), 0, 0.5)),
			ordering: decreasing, note: splitNote(split),
			Cause: "the article does not say where its levels cut (`homatb reproduce --splits` measures every candidate)"},
		{ID: "A8", Text: "80% load, P99 slowdown of all messages with k levels and SRPT", Published: "1 level 21.3x, 2 levels 14.3x, 4 levels 8.2x, SRPT 3.9x",
			Source: srcArticle, Mode: ModeQueue, Tolerance: "10%",
			Points:   []Point{near("1 level", 21.3, 0.1), near("2 levels", 14.3, 0.1), near("4 levels", 8.2, 0.1), near("SRPT", 3.9, 0.1)},
			queue:    queries(p99(w4, 0.8, l(1), 0, 1), p99(w4, 0.8, l(2), 0, 1), p99(w4, 0.8, l(4), 0, 1), p99(w4, 0.8, srpt, 0, 1)),
			ordering: decreasing, note: splitNote(split),
			Cause: "the article does not say where its levels cut (`homatb reproduce --splits` measures every candidate)"},
		{ID: "A9", Text: "W1-W5 at 80% load, P99 slowdown of the shortest half", Published: "PS 21-26x, SRPT 1.0-2.0x, 8 levels 1.0-2.5x",
			Source: srcArticle, Mode: ModeQueue, Tolerance: "10% beyond each range",
			Points: a9p, queue: queries(a9...),
			Cause: a9Cause},
	}
}

// a9Cause is why A9 does not reproduce with ArticleSplit.
const a9Cause = "the split's bounds, fitted on W4, put most of W1's and W2's shortest half in the top level with their longer messages (W1 13.6, W2 7.07); no log-spaced candidate gives W2 within 2.75 (2.93-241), while equal shares of the messages or of the bytes give every workload's 8 levels inside the band (1.0-1.86, 2.40-2.59) and miss A6, A7 and A8 (`homatb reproduce --splits`); W2's and W3's PS points swing with the seed around the steady state's 21 (seeds 1-40, `homatb reproduce A9 --queue-seeds 40`: W2 15.7-31.8, median 19.3, 24 of 40 inside the band; W3 15.0-34.0, median 18.7, 17 of 40)"

// splitNote names the split a level claim was read with.
func splitNote(split queuemodel.Policy) func(*queueRuns) string {
	return func(*queueRuns) string {
		return "levels split " + split.SplitName()
	}
}

// SplitRow is one candidate split's measurement of the level claims.
type SplitRow struct {
	Candidate SplitCandidate
	// Rows are the level claims measured with the candidate.
	Rows []Row
	// InBand and Points count the points of those claims inside their
	// bands.
	InBand, Points int
	// Miss is the largest miss of a split-dependent point (see miss).
	Miss float64
}

// SplitEvidence measures the level claims (A6-A9) with every candidate
// split over the queue model's seeds, messages a run (0: the article's).
func SplitEvidence(ctx context.Context, messages int, w io.Writer) ([]SplitRow, error) {
	return measureSplits(ctx, SplitCandidates(), nil, messages, w)
}

// FitGrid is the family ArticleSplit's bounds were chosen from: cuts
// log-spaced between Lo and Hi, PS within a level.
func FitGrid() []SplitCandidate {
	var out []SplitCandidate
	for _, lo := range []float64{700, 1000, 1300, 1600, 2000} {
		for _, hi := range []float64{1e6, 1.3e6, 1.6e6, 2e6} {
			out = append(out, SplitCandidate{Name: fmt.Sprintf("log-spaced, %g B to %g MB", lo, hi/1e6),
				Policy: queuemodel.Policy{Kind: queuemodel.Priority, Within: queuemodel.PS, Split: queuemodel.LogSpaced, Lo: lo, Hi: hi}})
		}
	}
	return out
}

// SplitFit measures A7 and A8, the claims ArticleSplit was chosen on,
// with every member of FitGrid.
func SplitFit(ctx context.Context, messages int, w io.Writer) ([]SplitRow, error) {
	return measureSplits(ctx, FitGrid(), []string{"A7", "A8"}, messages, w)
}

// measureSplits measures the level claims (those of ids, nil for all)
// with each candidate.
func measureSplits(ctx context.Context, cands []SplitCandidate, ids []string, messages int, w io.Writer) ([]SplitRow, error) {
	if messages == 0 {
		messages = queuemodel.ArticleMessages
	}
	var out []SplitRow
	q := newQueueRuns(messages)
	for _, cand := range cands {
		// The runs of levels are forgotten after each candidate: a run
		// holds its messages, and every candidate's would not fit in
		// memory together.
		q.dropLevels()
		sr := SplitRow{Candidate: cand}
		for _, c := range levelClaims(cand.Policy) {
			if ids != nil && !slices.Contains(ids, c.ID) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return out, err
			}
			var values [][]float64
			for _, seed := range queueSeeds() {
				v, err := c.queue(q, seed)
				if err != nil {
					return out, fmt.Errorf("%s with %s: %w", c.ID, cand.Policy, err)
				}
				values = append(values, v)
			}
			r := Row{ID: c.ID, Seeds: queueSeeds()}
			judge(&c, &r, values)
			for _, p := range r.Points {
				sr.Points++
				if p.Pass {
					sr.InBand++
				}
				if splitPoint(r.ID, p.Label) {
					sr.Miss = max(sr.Miss, miss(p))
				}
			}
			sr.Rows = append(sr.Rows, r)
		}
		progress(w, "%s, %s within: %d of %d points in band, largest miss %.0f%%", cand.Name, cand.Policy.Within, sr.InBand, sr.Points, 100*sr.Miss)
		out = append(out, sr)
	}
	return out, nil
}

// miss is how far a point's median is from its published value, relative
// to it, or, for a point published as a range, how far outside its band
// (the range with its tolerance).
func miss(p PointResult) float64 {
	switch {
	case p.Published != nil:
		return math.Abs(p.Median / *p.Published - 1)
	case p.Median > p.Hi:
		return p.Median/p.Hi - 1
	case p.Median < p.Lo:
		return 1 - p.Median/p.Lo
	}
	return 0
}

// WriteSplitTable writes the evidence as a markdown table: a row per
// candidate, a column per point that depends on the split.
func WriteSplitTable(w io.Writer, rows []SplitRow) error {
	if len(rows) == 0 {
		return nil
	}
	var head []string
	for _, r := range rows[0].Rows {
		for _, p := range r.Points {
			if splitPoint(r.ID, p.Label) {
				head = append(head, r.ID+" "+p.Label+pubSuffix(p))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| split | within | %s | points in band | largest miss |\n", strings.Join(head, " | "))
	b.WriteString("|---|---|" + strings.Repeat("---|", len(head)+2) + "\n")
	for _, sr := range rows {
		var cells []string
		for _, r := range sr.Rows {
			for _, p := range r.Points {
				if !splitPoint(r.ID, p.Label) {
					continue
				}
				s := fmtNum(p.Median)
				if p.Min != p.Max {
					s += " (" + fmtNum(p.Min) + "–" + fmtNum(p.Max) + ")"
				}
				if p.Pass {
					s = "**" + s + "**"
				}
				cells = append(cells, s)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d of %d | %.0f%% |\n", sr.Candidate.Name, sr.Candidate.Policy.Within, strings.Join(cells, " | "), sr.InBand, sr.Points, 100*sr.Miss)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// splitPoint says whether a level claim's point depends on the split
// (A7's and A8's single level does, through the discipline within it).
func splitPoint(id, label string) bool {
	return !strings.HasSuffix(label, " PS") && !strings.HasSuffix(label, "SRPT") && label != "SRPT 70%"
}

// pubSuffix is a point's published value or band, for a column head.
func pubSuffix(p PointResult) string {
	if p.Published != nil {
		return " (" + fmtNum(*p.Published) + ")"
	}
	return fmt.Sprintf(" (%s-%s)", fmtNum(p.Lo), fmtNum(p.Hi))
}
