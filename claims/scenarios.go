package claims

// quickOverrides are, per scenario, the top-level keys --quick replaces:
// shorter warm-up, measured time and drain (one seed), and no per-packet
// switch records. Each quick variant is written to the output directory
// beside its run, so what ran can be read and rerun.
var quickOverrides = map[string]string{
	paperTable: `
warmup: 300us
switch:
  ecn_threshold_pkts: 65
  postcards: false
sweep:
  - params: [phases.all2all.sizes, duration, drain]
    values:
      - ["w1", 100us, 200us]
      - ["w2", 1ms, 1ms]
      - ["w3", 2ms, 1ms]
      - ["w4", 2ms, 1ms]
      - ["w5", 2ms, 1ms]
`,
	maxLoad: `
warmup: 300us
duration: 1ms
drain: 1ms
switch:
  ecn_threshold_pkts: 65
  postcards: false
sweep:
  - param: phases.all2all.load
    values: [0.7, 0.8, 0.9]
`,
	overcommitClaim: `
warmup: 300us
duration: 2ms
drain: 1ms
switch:
  postcards: false
`,
	tcpNV: `
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
