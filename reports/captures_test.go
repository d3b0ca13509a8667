package reports

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
)

// TestCapturesLinked gives a synthetic run's experiment two captures in
// its manifest: the report lists each with a link to the file, its
// counts and the tshark command with the run's dissector; a run without
// captures has no such section.
func TestCapturesLinked(t *testing.T) {
	run := synthRun{seed: 5, lengths: []int64{200, 5000}, noCalib: true, noTel: true, noSwitch: true,
		exps: []synthExp{{name: "incast-homa", transport: "homa", n: 300, meanNs: 1000}}}
	dir := t.TempDir()
	run.write(t, dir)
	html := func() string {
		if _, err := Build(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if h := html(); strings.Contains(h, `id="captures"`) || strings.Contains(h, "#captures") {
		t.Error("a run without captures has a captures section")
	}
	m, _, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Experiments[0].Captures = []rundir.Capture{
		{File: "captures/incast-homa/h1.pcapng", Point: "host h1", Interface: "hb00001h1e0", Snaplen: 128, MaxBytes: 16 << 20, Packets: 1234, Bytes: 98765},
		{File: "captures/incast-homa/s1-h1.pcapng", Point: "switch s1 port 1 (to h1)", Snaplen: 128, MaxBytes: 16 << 20, Packets: 1300, LeftOut: 7, KernelDrops: 2, Bytes: 99999},
	}
	if err := rundir.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	h := html()
	for _, want := range []string{
		`<h2 id="captures">Packet captures</h2>`,
		`<a href="#captures">Packet captures</a>`,
		`<a href="captures/incast-homa/h1.pcapng">captures/incast-homa/h1.pcapng</a>`,
		`<a href="captures/incast-homa/s1-h1.pcapng">`,
		`<a href="captures/homatb.lua">captures/homatb.lua</a>`,
		`<code>tshark -X lua_script:captures/homatb.lua -r captures/incast-homa/s1-h1.pcapng</code>`,
		`<td class="l">switch s1 port 1 (to h1)</td>`,
		`<td>1300</td><td>99999</td><td>128</td><td>7</td><td>2</td>`,
	} {
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
}

// TestAdversariesSection: a run whose second experiment had an adversary
// gets an "Adversaries" section listing both experiments, the attack with
// its packets and rate, and the victims' drops by reason from the
// transport counters; the attack-free one says none.
func TestAdversariesSection(t *testing.T) {
	run := synthRun{seed: 7, lengths: []int64{100, 1000000}, noCalib: true, noTel: true, noSwitch: true,
		exps: []synthExp{{name: "adv-homa-kindnone", transport: "homa", n: 200, meanNs: 1000},
			{name: "adv-homa-kindmalformed", transport: "homa", n: 200, meanNs: 3000}}}
	dir := t.TempDir()
	run.write(t, dir)
	m, _, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Experiments[1].Adversaries = []rundir.Adversary{{Host: "h11", TargetHost: "h1", Kind: "malformed", Target: "10.0.0.1",
		RateBps: 10e6, Packets: 20000, Bytes: 5_000_000, Seconds: 4}}
	m.Experiments[1].TransportCounters = map[string]uint64{"homa_drop_truncated": 6000, "homa_drop_bad_field": 2700, "homa_drop_wrong_peer": 0}
	if err := rundir.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	// The attacked experiment's switch counted its defences on port 11.
	if err := rundir.WriteSwitchStats(dir, "adv-homa-kindmalformed", "s1", rundir.SwitchStats{Ports: []switchstats.Port{
		{Port: 11, RemarkedPkts: 15000, MeteredPkts: 7, SpoofDrops: 3}, {Port: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	h := string(b)
	for _, want := range []string{
		`<td class="l">re-marked 15000, metered 7, spoofed 3</td></tr>`,
		`<td class="l">none</td><td class="l">unavailable</td></tr>`,
		`<h2 id="adversaries">Adversaries</h2>`,
		`<a href="#adversaries">Adversaries</a>`,
		`<td class="l">malformed h11→h1: 20000 packets, 10.0 Mbit/s</td>`,
		`<a href="#exp-adv-homa-kindnone">adv-homa-kindnone</a></td><td class="l"></td><td class="l">none</td>`,
	} {
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
}

// TestDropString lists the nonzero drop counters, sorted, and "none".
func TestDropString(t *testing.T) {
	for _, tt := range []struct {
		in   map[string]uint64
		want string
	}{
		{nil, "none"},
		{map[string]uint64{"homa_drop_wrong_peer": 0, "homa_malformed": 9}, "none"},
		{map[string]uint64{"homa_drop_truncated": 6, "homa_drop_bad_field": 2, "homa_drop_wrong_peer": 0}, "bad_field 2, truncated 6"},
	} {
		if got := dropString(tt.in); got != tt.want {
			t.Errorf("dropString(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
