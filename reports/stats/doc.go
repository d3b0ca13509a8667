// Package stats turns a run directory (manifest.json, rpcs.csv[.gz],
// telemetry.csv, switch/<experiment>/<switch>.json; see docs/formats.md) into
// statistics and writes their machine-readable exports: summary.json,
// by_size.csv, cperf-compatible <experiment>.data files, short-message CCDFs
// and HdrHistogram percentile spectra. Rendering them (package reports) is
// not its business.
//
// Percentiles are exact nearest-rank order statistics of the raw samples: the
// q-quantile of n sorted samples x(1) <= ... <= x(n) is x(ceil(q*n)). Each
// carries a distribution-free confidence interval [x(j), x(k)] chosen from
// the binomial distribution of the number of samples below the true quantile
// (see ConfidenceRanks). The .hgrm files use HdrHistogram's own definition
// (nearest rank, highest equivalent value of the bucket, 3 significant digits).
//
// The package reads only files; it does not import the orchestrator, the
// agents or the controller.
package stats
