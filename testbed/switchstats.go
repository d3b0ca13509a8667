package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// statsClient reads a switch's statistics from its admin socket (GET /stats,
// the switch statistics format of docs/formats.md).
type statsClient struct {
	name   string
	socket string
	http   *http.Client
}

func newStatsClient(name, socket string) *statsClient {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &statsClient{name: name, socket: socket, http: &http.Client{Transport: tr, Timeout: 3 * time.Second}}
}

// resetWindow restarts the switch's peaks and delay percentiles, which
// cannot be differenced, so an experiment's file holds only its own.
func (c *statsClient) resetWindow(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://switch/stats/reset-window", nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("switch %s reset window: %w", c.name, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("switch %s reset window: %s", c.name, resp.Status)
	}
	return nil
}

// fetch returns the switch's current statistics as generic JSON, so fields
// the switch adds later are carried through untouched.
func (c *statsClient) fetch(ctx context.Context) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://switch/stats", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("switch %s stats: %w", c.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("switch %s stats: %w", c.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("switch %s stats: %s: %s", c.name, resp.Status, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("switch %s stats: %w", c.name, err)
	}
	return m, nil
}

// gauges are switch statistics that are states, not counters: an
// experiment's file carries their value at its end rather than a difference.
var gauges = map[string]bool{
	"device_id": true, "port": true, "iface": true, "queue": true, "rate_bps": true,
	"depth_pkts": true, "depth_bytes": true, "peak_pkts": true, "peak_bytes": true,
	"delay_p50_us": true, "delay_p99_us": true, "delay_max_us": true,
	"drop_prob": true, "drop_every": true,
}

// diffStats returns end minus start for every counter, matching ports and
// queues by position (the switch lists them in a fixed order).
func diffStats(start, end any) any {
	switch e := end.(type) {
	case map[string]any:
		s, _ := start.(map[string]any)
		out := make(map[string]any, len(e))
		for k, v := range e {
			if gauges[k] {
				out[k] = v
				continue
			}
			out[k] = diffStats(s[k], v)
		}
		return out
	case []any:
		s, _ := start.([]any)
		out := make([]any, len(e))
		for i, v := range e {
			var sv any
			if i < len(s) {
				sv = s[i]
			}
			out[i] = diffStats(sv, v)
		}
		return out
	case float64:
		if s, ok := start.(float64); ok && s <= e {
			return e - s
		}
		return e
	}
	return end
}

func writeJSONFile(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// switchTotals is what the fidelity checks need from a diffed statistics
// document: packets the switch lost or could not send.
type switchTotals struct {
	kernelDrops, noBuffer, txErrors float64
}

func totals(doc any) switchTotals {
	var t switchTotals
	m, _ := doc.(map[string]any)
	ports, _ := m["ports"].([]any)
	for _, p := range ports {
		pm, _ := p.(map[string]any)
		t.kernelDrops += num(pm["kernel_drops"])
		t.noBuffer += num(pm["no_buffer"])
		t.txErrors += num(pm["tx_errors"])
	}
	return t
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}
