// Package reports renders a run directory's statistics (package stats) as
// a self-contained report.html with inline SVG charts, and two runs side by
// side as compare.html. Build analyses a run directory with package stats,
// writes its exports (summary.json, by_size.csv, cperf .data files, CCDFs,
// HdrHistogram spectra) and then the report.
//
// Dependencies point one way: reports imports stats, never the reverse.
// The package reads only files; it does not import the orchestrator, the
// agents or the controller.
package reports
