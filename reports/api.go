package reports

import (
	"log/slog"

	"github.com/homatb/homatb/reports/stats"
)

// The statistics live in package stats; these names let callers that only
// build and read reports import one package.
type (
	// Summary is summary.json (stats.Summary).
	Summary = stats.Summary
	// Experiment is one experiment's statistics (stats.Experiment).
	Experiment = stats.Experiment
	// Headline is the numbers a comparison puts side by side.
	Headline = stats.Headline
	// HeadlineRow is one configuration's headline across repetitions.
	HeadlineRow = stats.HeadlineRow
	// RatioRow is a configuration's headline over the baseline's.
	RatioRow = stats.RatioRow
	// Spread is the spread of a figure across repetitions.
	Spread = stats.Spread
	// Versus is one transport's headline against the baseline's.
	Versus = stats.Versus
	// PhaseStats is one phase's RTT percentiles.
	PhaseStats = stats.PhaseStats
	// CollectiveStats is one collective's completion times.
	CollectiveStats = stats.CollectiveStats
	// MatrixStats is one connection matrix's statistics.
	MatrixStats = stats.MatrixStats
	// Option configures Build and Compare.
	Option = stats.Option
)

// WithLogger sets the logger for progress messages.
func WithLogger(l *slog.Logger) Option { return stats.WithLogger(l) }

// WithOutputDir writes the outputs into dir instead of the run directory.
func WithOutputDir(dir string) Option { return stats.WithOutputDir(dir) }

// WithMaxExactLengths bins by exact request length up to n distinct lengths.
func WithMaxExactLengths(n int) Option { return stats.WithMaxExactLengths(n) }

// WithMinBinSamples sets the fewest samples of a log-spaced size bin.
func WithMinBinSamples(n int) Option { return stats.WithMinBinSamples(n) }

// WithShortMaxLength sets the largest request and response of a short message.
func WithShortMaxLength(n int64) Option { return stats.WithShortMaxLength(n) }

// WithJobs analyses up to n experiments at once, with the same outputs.
func WithJobs(n int) Option { return stats.WithJobs(n) }
