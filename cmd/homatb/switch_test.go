package main

import (
	"io"
	"log/slog"
	"testing"

	"github.com/homatb/homatb/p4/dataplane"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"1Gbit", 1_000_000_000, false},
		{"100mbit", 100_000_000, false},
		{"2.5Gbit", 2_500_000_000, false},
		{"64kbit", 64_000, false},
		{"1000000", 1_000_000, false},
		{"unlimited", 0, false},
		{"0", 0, false},
		{"1Gbps", 0, true},
		{"fast", 0, true},
		{"-1Mbit", 0, true},
	}
	for _, tc := range tests {
		got, err := parseRate(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseRate(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestSwitchFlagsToConfig(t *testing.T) {
	f := &switchFlags{
		interfaces:     []string{"1@s1-eth1", "2@s1-eth2"},
		deviceID:       3,
		linkRate:       "100Mbit",
		queueDepthPkts: 32,
		queueDepths:    []string{"2:7:8"},
		queueRates:     []string{"1:*:1000"},
		dropProb:       []string{"2:0.25"},
		dropEvery:      []string{"2:10"},
		batch:          16,
	}
	cfg, err := f.dataplaneConfig(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Ports[1] != "s1-eth1" || cfg.Ports[2] != "s1-eth2" || len(cfg.Ports) != 2 {
		t.Errorf("ports %v", cfg.Ports)
	}
	if cfg.LinkRateBps != 100_000_000 || cfg.Unshaped || cfg.DeviceID != 3 || cfg.QueueDepthPkts != 32 || cfg.BatchSize != 16 {
		t.Errorf("config %+v", cfg)
	}
	if len(cfg.QueueDepths) != 1 || cfg.QueueDepths[0] != (dataplane.QueueDepth{Port: 2, Queue: 7, Pkts: 8}) {
		t.Errorf("queue depths %+v", cfg.QueueDepths)
	}
	if len(cfg.QueueRates) != 1 || cfg.QueueRates[0] != (dataplane.QueueRate{Port: 1, Queue: -1, PPS: 1000}) {
		t.Errorf("queue rates %+v", cfg.QueueRates)
	}
	if cfg.Faults[2] != (dataplane.Fault{DropProb: 0.25, EveryN: 10}) {
		t.Errorf("faults %+v", cfg.Faults)
	}
}

func TestSwitchFlagsRejected(t *testing.T) {
	base := func() *switchFlags { return &switchFlags{interfaces: []string{"1@a"}, linkRate: "1Gbit"} }
	tests := []struct {
		name   string
		mutate func(*switchFlags)
	}{
		{"no ports", func(f *switchFlags) { f.interfaces = nil }},
		{"port 0", func(f *switchFlags) { f.interfaces = []string{"0@a"} }},
		{"port 64", func(f *switchFlags) { f.interfaces = []string{"64@a"} }},
		{"no iface", func(f *switchFlags) { f.interfaces = []string{"1@"} }},
		{"duplicate port", func(f *switchFlags) { f.interfaces = []string{"1@a", "1@b"} }},
		{"bad rate", func(f *switchFlags) { f.linkRate = "1GB" }},
		{"queue 8", func(f *switchFlags) { f.queueRates = []string{"1:8:100"} }},
		{"queue depth shape", func(f *switchFlags) { f.queueDepths = []string{"1:2"} }},
		{"probability above 1", func(f *switchFlags) { f.dropProb = []string{"1:1.5"} }},
		{"drop every negative", func(f *switchFlags) { f.dropEvery = []string{"1:-3"} }},
	}
	for _, tc := range tests {
		f := base()
		tc.mutate(f)
		if _, err := f.dataplaneConfig(slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
