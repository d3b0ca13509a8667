package stats

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/homatb/homatb/rundir"
)

// config holds Build's settings; zero values of Options mean defaults.
type config struct {
	Logger        *slog.Logger
	OutDir        string
	maxExact      int
	minBinSamples int
	ShortMax      int64
	// headlinePhase, when set, makes the short set one phase's RPCs (the
	// scenario's report.headline_phase); set per experiment.
	headlinePhase string
	phaseOrder    []string
	// collOrder and collPhases are the scenario's collective phases, in
	// its order and by name; set per experiment.
	collOrder  []string
	collPhases map[string]scenarioCollective
	// spread is what the fabric's switches and pods carry, for a
	// collective's ideal (fabricCritical); set per experiment.
	spread *fabricSpread
	// matrices are the scenario's connection-matrix phases.
	matrices   []matrixPhase
	confidence float64
	// jobs is how many experiments are analysed at once.
	jobs int
}

func DefaultConfig() config {
	return config{
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		maxExact:      100,
		minBinSamples: 1000,
		ShortMax:      rundir.ShortMaxBytes,
		confidence:    0.95,
		jobs:          1,
	}
}

// Option changes how Build and Compare work.
type Option func(*config) error

// WithLogger sends progress logs to l (default: discarded).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("reports: nil logger")
		}
		c.Logger = l
		return nil
	}
}

// WithOutputDir writes the outputs to dir instead of the run directory.
func WithOutputDir(dir string) Option {
	return func(c *config) error {
		c.OutDir = dir
		return nil
	}
}

// WithMaxExactLengths sets how many distinct request lengths an experiment
// may have and still be binned by exact length, as cperf does (default 100).
// With more, lengths go into log-spaced bins.
func WithMaxExactLengths(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("reports: max exact lengths %d < 1", n)
		}
		c.maxExact = n
		return nil
	}
}

// WithMinBinSamples sets the fewest samples a log-spaced bin may hold
// (default 1000, so P99 has an interval on both sides). Runs too small for
// that use a twentieth of their samples, at least 100.
func WithMinBinSamples(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("reports: min bin samples %d < 1", n)
		}
		c.minBinSamples = n
		return nil
	}
}

// WithShortMaxLength sets the largest request that counts as a short
// message (default 1000 bytes, the summary.json contract).
func WithShortMaxLength(n int64) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("reports: short max length %d < 1", n)
		}
		c.ShortMax = n
		return nil
	}
}

// WithJobs analyses up to n experiments at once (default 1), each on a
// core of its own while the records are read; the outputs are the same
// whatever n. The memory is then up to n+1 experiments' records.
func WithJobs(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("reports: jobs %d < 1", n)
		}
		c.jobs = n
		return nil
	}
}

func NewConfig(opts []Option) (config, error) {
	c := DefaultConfig()
	for _, o := range opts {
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}
