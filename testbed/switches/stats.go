package switches

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
)

// StatsClient reads a switch's statistics from its admin socket (GET /stats,
// the switch statistics format of docs/formats.md).
type StatsClient struct {
	name   string
	socket string
	http   *http.Client
}

// NewStatsClient reaches switch name's admin socket (the embedded target's
// --admin-socket).
func NewStatsClient(name, socket string) *StatsClient {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &StatsClient{name: name, socket: socket, http: &http.Client{Transport: tr, Timeout: 3 * time.Second}}
}

// ResetWindow restarts the switch's peaks and delay percentiles, which
// cannot be differenced, so an experiment's file holds only its own.
func (c *StatsClient) ResetWindow(ctx context.Context) error {
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

// Fetch returns the switch's current statistics.
func (c *StatsClient) Fetch(ctx context.Context) (rundir.SwitchStats, error) {
	var st rundir.SwitchStats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://switch/stats", nil)
	if err != nil {
		return st, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return st, fmt.Errorf("switch %s stats: %w", c.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, fmt.Errorf("switch %s stats: %w", c.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("switch %s stats: %s: %s", c.name, resp.Status, b)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("switch %s stats: %w", c.name, err)
	}
	return st, nil
}

// SetFault changes one port's fault injection (POST /faults).
func (c *StatsClient) SetFault(ctx context.Context, fs switchstats.FaultSetting) error {
	body, err := json.Marshal(fs)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://switch/faults", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("switch %s fault: %w", c.name, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("switch %s fault on port %d: %s: %s", c.name, fs.Port, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// StartPostcards has the switch record every frame it forwards into path
// (POST /postcards/start); one still recording is stopped first, so an
// experiment that ended early does not keep the next from recording.
func (c *StatsClient) StartPostcards(ctx context.Context, path string) error {
	body, err := json.Marshal(map[string]string{"path": path})
	if err != nil {
		return err
	}
	err = c.post(ctx, "/postcards/start", body, nil)
	if err != nil {
		if _, serr := c.StopPostcards(ctx); serr == nil {
			err = c.post(ctx, "/postcards/start", body, nil)
		}
	}
	return err
}

// StopPostcards ends the recording (POST /postcards/stop).
func (c *StatsClient) StopPostcards(ctx context.Context) (switchstats.PostcardSummary, error) {
	var s switchstats.PostcardSummary
	err := c.post(ctx, "/postcards/stop", nil, &s)
	return s, err
}

// post sends body to the admin endpoint at path and decodes a 200 answer
// into out, unless out is nil.
func (c *StatsClient) post(ctx context.Context, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://switch"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("switch %s %s: %w", c.name, path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("switch %s %s: %s: %s", c.name, path, resp.Status, bytes.TrimSpace(msg))
	}
	if out != nil {
		if err := json.Unmarshal(msg, out); err != nil {
			return fmt.Errorf("switch %s %s: %w", c.name, path, err)
		}
	}
	return nil
}
