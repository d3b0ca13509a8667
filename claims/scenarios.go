package claims

// quickOverrides are, per scenario, the top-level keys --quick replaces:
// shorter measured time and drain (one seed; the paper table's W2-W5 keep
// at least their longest message's time on the wire, which a run must
// measure), and no per-packet switch records. The twin's warm-up stays
// the full run's (2 ms, W3's 4 ms, W5's 10 ms):
// Homa's receivers compute their priority cutoffs from the first thousand
// messages and send them at most once a millisecond, so a shorter warm-up
// measures the start's cutoffs (0.3 ms gave Homa's W1 shortest half a P99
// of 61). Each quick variant
// is written to the output directory beside its run, so what ran can be
// read and rerun.
var quickOverrides = map[string]string{
	paperTable: `
warmup: 2ms
switch:
  ecn_threshold_pkts: 65
  postcards: false
sweep:
  - params: [phases.all2all.sizes, warmup, duration, drain]
    values:
      - ["w1", 2ms, 500us, 1ms]
      - ["w2,max=30MB", 2ms, 3ms, 1ms]
      - ["w3,max=30MB", 4ms, 13ms, 2ms]
      - ["w4,max=30MB", 2ms, 9ms, 2ms]
      - ["w5,max=30MB", 10ms, 25ms, 2ms]
`,
	maxLoad: `
warmup: 2ms
duration: 2ms
drain: 3ms
switch:
  ecn_threshold_pkts: 65
  postcards: false
sweep:
  - param: phases.all2all.load
    values: [0.6, 0.7, 0.8, 0.9]
`,
	receiverDriven: `
warmup: 2ms
duration: 2ms
drain: 2ms
switch:
  postcards: false
`,
	overcommitClaim: `
warmup: 2ms
duration: 2ms
drain: 3ms
switch:
  postcards: false
`,
	preemptionLag: `
warmup: 2ms
duration: 3ms
drain: 1ms
`,
	tcpNV: `
warmup: 1s
duration: 5s
drain: 1s
`,
	tcpNVPFC: `
warmup: 1s
duration: 5s
drain: 1s
`,
	implementation: `
warmup: 1s
duration: 5s
drain: 5s
`,
}
