package reports

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// homaBlock is a homa block as manifest.json writes it: every key, the
// defaults resolved from a zero homaconf.Config, with set overriding.
func homaBlock(t *testing.T, set map[string]any) map[string]any {
	t.Helper()
	var b map[string]any
	raw, err := json.Marshal(settingsMap(homaconf.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		b[k] = v
	}
	return b
}

func settingsMap(c homaconf.Config) map[string]any {
	m := map[string]any{}
	for _, s := range c.Settings() {
		m[s.Key] = s.Value
	}
	return m
}

// TestTransportRowsListWhatEachReads: the report's row of each transport
// names only the keys its protocol reads and that differ from their
// defaults: TCP none of Homa's, Homa none of RoCE's, RoCE none of Homa's
// grants, pFabric neither.
func TestTransportRowsListWhatEachReads(t *testing.T) {
	tcpBlock := map[string]any{"congestion": "cubic"}
	tests := []struct {
		name      string
		transport map[string]any
		want      string
	}{
		{"tcp", map[string]any{"name": "tcp", "homa": homaBlock(t, nil), "tcp": tcpBlock}, "congestion cubic"},
		{"tcp with homa keys set", map[string]any{"name": "tcp", "homa": homaBlock(t, map[string]any{"overcommit": 2.0}), "tcp": map[string]any{}}, "defaults"},
		{"homa", map[string]any{"name": "homa", "homa": homaBlock(t, map[string]any{"overcommit": 2.0, "roce_priority": 2.0, "credit_window_bytes": 9000.0}), "tcp": tcpBlock}, "overcommit 2"},
		{"homa defaults", map[string]any{"name": "homa", "homa": homaBlock(t, nil), "tcp": tcpBlock}, "defaults"},
		{"roce", map[string]any{"name": "roce", "homa": homaBlock(t, map[string]any{"roce_dcqcn": false, "overcommit": 2.0, "priorities": 8.0}), "tcp": tcpBlock}, "priorities 8, roce_dcqcn false"},
		{"pfabric", map[string]any{"name": "pfabric", "homa": homaBlock(t, map[string]any{"fifo_grants": false, "roce_priority": 2.0}), "pfabric": map[string]any{"buffer_bytes": 36000.0}, "tcp": tcpBlock}, "buffer_bytes 36000"},
		{"phost", map[string]any{"name": "phost", "homa": homaBlock(t, map[string]any{"credit_window_bytes": 9000.0, "overcommit": 2.0}), "tcp": tcpBlock}, "credit_window_bytes 9000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := settingsOf(tc.transport); got != tc.want {
				t.Errorf("row %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDefaultTrueMatchesHomaconf: the keys the report takes as true by
// default are exactly those a zero homaconf.Config reports true.
func TestDefaultTrueMatchesHomaconf(t *testing.T) {
	var got []string
	for _, s := range (homaconf.Config{}).Settings() {
		if v, ok := s.Value.(bool); ok && v {
			got = append(got, s.Key)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(defaultTrue))
	if !slices.Equal(got, want) {
		t.Errorf("homaconf's true defaults %v, the report's %v", got, want)
	}
}

// TestReadableManifestFiltersTransports: the report's manifest dump keeps
// every other member in its order and cuts each transport's blocks to
// what it reads.
func TestReadableManifestFiltersTransports(t *testing.T) {
	raw := `{"run":"r","scenario":{"name":"s","transports":[` +
		`{"name":"tcp","homa":{"overcommit":2,"defences":true},"tcp":{"congestion":"cubic"}},` +
		`{"name":"roce","homa":{"overcommit":2,"roce_dcqcn":false,"priorities":8},"tcp":{"congestion":"cubic"}}` +
		`],"duration":"2s"},"tag":"hb1"}`
	got, err := readableManifest([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"run":"r","scenario":{"name":"s","transports":[` +
		`{"name":"tcp","tcp":{"congestion":"cubic"}},` +
		`{"name":"roce","homa":{"roce_dcqcn":false,"priorities":8}}` +
		`],"duration":"2s"},"tag":"hb1"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := readableManifest([]byte(`[1]`)); err == nil || !strings.Contains(err.Error(), "manifest") {
		t.Errorf("a manifest that is no object: %v", err)
	}
}
