package agent

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/testbed/scenario"
)

func TestHomaConfig(t *testing.T) {
	in := homaconf.Config{LinkBps: 10e9, Overcommit: 2, Priorities: 4, Tick: 250 * time.Microsecond, UnloadedRTT: 20 * time.Microsecond,
		DisableFIFOGrants: true, ResendInterval: 3, MaxNICBacklog: 40 * time.Microsecond, Poll: 50 * time.Microsecond, FrameOverhead: 14}
	c, err := homaConfig(agentpb.NewHomaParams(in))
	if err != nil {
		t.Fatal(err)
	}
	if c.LinkBps != 10e9 || c.Overcommit != 2 || c.Priorities != 4 || c.Tick != 250*time.Microsecond ||
		c.UnloadedRTT != 20*time.Microsecond || !c.DisableFIFOGrants || c.ResendInterval != 3 || c.MaxNICBacklog != 40*time.Microsecond ||
		c.Poll != 50*time.Microsecond || c.FrameOverhead != 14 {
		t.Errorf("config %+v", c)
	}
	for _, bad := range []homaconf.Config{{FIFOGrantPermille: 1000}, {Variant: "pias"}, {Overcommit: 9}} {
		if _, err := homaConfig(agentpb.NewHomaParams(bad)); err == nil {
			t.Errorf("config %+v accepted", bad)
		}
	}
	if _, err := homaConfig(&agentpb.HomaParams{ConfigJson: []byte(`{"Extra":{}}`)}); err == nil {
		t.Error("an unknown field was accepted")
	}
}

// TestEngineVariants checks that the comparison transports are built on
// the engine: each name selects its variant through the configuration,
// and the records carry the name.
func TestEngineVariants(t *testing.T) {
	for _, name := range []string{"homa", "pfabric", "phost", "ndp"} {
		v, ok := EngineVariant(name)
		if !ok || string(v) != name {
			t.Errorf("EngineVariant(%q) = %q, %v", name, v, ok)
		}
		req := &agentpb.ConfigureRequest{Transport: agentpb.Transport_TRANSPORT_HOMA,
			Homa: agentpb.NewHomaParams(homaconf.Config{Variant: v})}
		c, err := homaConfig(req.GetHoma())
		if err != nil || c.Variant != v {
			t.Errorf("%s: config variant %q, %v", name, c.Variant, err)
		}
		if got := transportLabel(req); got != name {
			t.Errorf("%s: records name %q", name, got)
		}
	}
	if _, ok := EngineVariant("pias"); ok {
		t.Error("pias is not an engine variant")
	}
	if got := transportLabel(&agentpb.ConfigureRequest{Transport: agentpb.Transport_TRANSPORT_HOMA}); got != "homa" {
		t.Errorf("plain homa named %q", got)
	}
}

// homaPropertyScenario is a scenario with one engine transport whose homa
// block and link MTU the property test fills in.
const homaPropertyScenario = `name: p
topology: {kind: star, hosts: 3}
link: {rate: 100Mbit, mtu: %d}
transports:
  - name: %s
    homa: {%s}
phases:
  - {name: bulk, clients: [h2-h3], servers: [h1], sizes: "fixed:1000", arrivals: closed, max_outstanding: 1}
duration: 1s
`

// homaCandidates are values for a key: each key's in-range values and the
// edges and beyond of every limit homaconf has.
func homaCandidates(key string) []string {
	switch key {
	case "variant":
		return []string{"homa", "pfabric", "phost", "ndp", "pias"}
	case "unsched_cutoffs":
		return []string{"[]", "[3000, 1000]", "[1000, 3000]", "[9, 8, 7, 6, 5, 4, 3, 2]", "[9, 8, 7, 6, 5, 4, 3, 2, 1]"}
	case "pacer_spin_us":
		return []string{"off", "0", "-1", "50", "20000"}
	}
	if strings.HasSuffix(key, "_us") {
		return []string{"0", "1", "50", "10000", "10001", "-1"}
	}
	switch key {
	case "basic", "fifo_grants", "incast_control", "start_msg", "at_least_once":
		return []string{"true", "false"}
	}
	return []string{"0", "1", "2", "3", "4", "5", "8", "9", "100", "999", "1000", "1001", "2000", "65535", "-1", "20000000"}
}

// TestHomaValidationAgrees is the property of issue #30: every scenario
// that homatb validate accepts configures an agent without error, and
// every configuration an agent refuses is refused by validate, with the
// file and line of the value. Random homa blocks of one to four keys,
// each with in-range and out-of-range values, on every engine transport
// and a few MTUs.
func TestHomaValidationAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	keys := homaconf.Keys()
	var accepted, refusedByAgent int
	for i := range 1500 {
		var kv []string
		for range 1 + rng.IntN(4) {
			k := keys[rng.IntN(len(keys))]
			c := homaCandidates(k)
			kv = append(kv, k+": "+c[rng.IntN(len(c))])
		}
		name := []string{"homa", "pfabric", "phost", "ndp"}[rng.IntN(4)]
		mtu := []int{1500, 9000, 576}[rng.IntN(3)]
		text := fmt.Sprintf(homaPropertyScenario, mtu, name, strings.Join(kv, ", "))
		file := fmt.Sprintf("case%d.yaml", i)
		src, err := scenario.Parse(file, []byte(text))
		if err != nil {
			continue // not a Config at all: the agent cannot be sent it
		}
		tr := src.Raw.Transports[0]
		_, agentErr := homaConfig(agentpb.NewHomaParams(tr.HomaConfig(src.Raw.Fabric())))
		plan, err := src.Plan(scenario.Options{})
		if err == nil {
			accepted++
			for _, e := range plan.Experiments {
				if _, err := homaConfig(agentpb.NewHomaParams(e.Transport.HomaConfig(e.Scenario.Fabric()))); err != nil {
					t.Errorf("validate accepted {%s} on %s, mtu %d; the agent refuses it: %v", strings.Join(kv, ", "), name, mtu, err)
				}
			}
			continue
		}
		if agentErr == nil {
			continue
		}
		refusedByAgent++
		var es scenario.Errors
		if !errors.As(err, &es) || len(es) == 0 || es[0].Line < 2 || !strings.HasPrefix(err.Error(), file+":") {
			t.Errorf("{%s} on %s: the agent refuses it (%v); validate says %v, want FILE:LINE", strings.Join(kv, ", "), name, agentErr, err)
		}
	}
	t.Logf("%d accepted, %d refused by the agent", accepted, refusedByAgent)
	if accepted < 100 || refusedByAgent < 100 {
		t.Errorf("%d cases accepted, %d refused by the agent: the candidates do not cover both sides", accepted, refusedByAgent)
	}
}
