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
}
