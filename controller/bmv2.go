package controller

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
)

// simpleSwitchCLI drives BMv2's simple_switch_CLI, the only way to set queue
// rates and depths (they are not part of P4Runtime).
type simpleSwitchCLI struct {
	// Path of simple_switch_CLI (default: looked up on PATH).
	Path string
	// Host and ThriftPort of the switch's Thrift server (default
	// 127.0.0.1:9090).
	Host       string
	ThriftPort int
	// NetNS, when set, is the network namespace to run the CLI in (with
	// nsenter), where Host is the switch's own loopback.
	NetNS string
}

// Run sends commands, one a line, and fails if the CLI reports an error.
func (s simpleSwitchCLI) Run(ctx context.Context, commands ...string) (string, error) {
	path := s.Path
	if path == "" {
		p, err := exec.LookPath("simple_switch_CLI")
		if err != nil {
			return "", fmt.Errorf("simple_switch_CLI: %w", err)
		}
		path = p
	}
	host, port := s.Host, s.ThriftPort
	if host == "" {
		host = "127.0.0.1"
	}
	if port == 0 {
		port = 9090
	}
	args := []string{path, "--thrift-ip", host, "--thrift-port", strconv.Itoa(port)}
	if s.NetNS != "" {
		args = append([]string{"nsenter", "--net=" + s.NetNS, "--"}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := out.String()
	if err != nil {
		return text, fmt.Errorf("simple_switch_CLI %s:%d: %w: %s", host, port, err, strings.TrimSpace(text))
	}
	// The CLI exits 0 even when a command fails; it prints the error.
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "Error") || strings.Contains(line, "Invalid") {
			return text, fmt.Errorf("simple_switch_CLI %s:%d: %s", host, port, strings.TrimSpace(line))
		}
	}
	return text, nil
}

// queueCommands returns the CLI commands that set rate and depth on every
// priority queue of the given ports (BMv2 applies a port-level setting to
// all its priority queues). Zero leaves a setting alone.
func queueCommands(ports []int, ratePPS, depthPkts int) []string {
	var cmds []string
	for _, p := range ports {
		if depthPkts > 0 {
			cmds = append(cmds, fmt.Sprintf("set_queue_depth %d %d", depthPkts, p))
		}
		if ratePPS > 0 {
			cmds = append(cmds, fmt.Sprintf("set_queue_rate %d %d", ratePPS, p))
		}
	}
	return cmds
}

// applyBMv2Queues sets a BMv2 switch's queues when configured and when
// simple_switch_CLI is installed; without it the settings are skipped with a
// warning, since the switch still forwards (with BMv2's defaults).
func applyBMv2Queues(ctx context.Context, sw Switch, ports []int, log *slog.Logger) error {
	cmds := queueCommands(ports, sw.BMv2.RatePPS, sw.BMv2.DepthPkts)
	if len(cmds) == 0 {
		return nil
	}
	if _, err := exec.LookPath("simple_switch_CLI"); err != nil {
		log.Warn("simple_switch_CLI not installed: BMv2 queue rate and depth left at defaults", "switch", sw.Name)
		return nil
	}
	host := "127.0.0.1"
	if sw.BMv2.NetNS == "" && !strings.HasPrefix(sw.Address, "unix:") {
		h, _, err := net.SplitHostPort(sw.Address)
		if err != nil {
			return fmt.Errorf("bmv2 queues: %w", err)
		}
		if h != "" && h != "0.0.0.0" {
			host = h
		}
	}
	if _, err := (simpleSwitchCLI{Host: host, ThriftPort: sw.BMv2.ThriftPort, NetNS: sw.BMv2.NetNS}).Run(ctx, cmds...); err != nil {
		return fmt.Errorf("bmv2 queues: %w", err)
	}
	return nil
}
