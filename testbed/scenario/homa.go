package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/internal/fabric"
)

// HomaParams is a transport's homa block: the homaconf.Config the agents
// run, written with homaconf's keys (homaconf.Keys, docs/homa.md). Zero
// means the agent's default. The block does not set the link rate or the
// MTU (link: rate, mtu), nor the unloaded RTT (calibration); the variant
// is the transport's name (HomaConfig). Files written before the keys had
// fields set some of them under extra, as strings; they still decode.
type HomaParams struct {
	homaconf.Config
}

// UnmarshalYAML decodes each key into Config through homaconf's Config.Set,
// reporting every unknown key or value of the wrong type with its line.
func (h *HomaParams) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return typeError(n, "expected a mapping of homa settings: "+strings.Join(homaKeys(), ", "))
	}
	var errs []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value != "extra" {
			if err := setHomaKey(&h.Config, k, v); err != nil {
				errs = append(errs, err.Error())
			}
			continue
		}
		if v.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Sprintf("line %d: expected a mapping of homa keys to values, got %s", v.Line, kindName(v.Kind)))
			continue
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			if err := setHomaKey(&h.Config, v.Content[j], v.Content[j+1]); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return &yaml.TypeError{Errors: errs}
	}
	return nil
}

// setHomaKey sets the field of key k from value node v, with an error in
// yaml.v3's "line N: ..." form so that decoding names the field.
func setHomaKey(c *homaconf.Config, k, v *yaml.Node) error {
	if !slices.Contains(homaconf.Keys(), k.Value) {
		return fmt.Errorf("line %d: unknown field %q; expected one of: %s", k.Line, k.Value, strings.Join(homaKeys(), ", "))
	}
	var val any
	if err := v.Decode(&val); err != nil {
		return fmt.Errorf("line %d: %s: %w", v.Line, k.Value, err)
	}
	if err := c.Set(k.Value, val); err != nil {
		var he *homaconf.Error
		if errors.As(err, &he) {
			return fmt.Errorf("line %d: %s", v.Line, he.Msg)
		}
		return fmt.Errorf("line %d: %w", v.Line, err)
	}
	return nil
}

// MarshalYAML writes every key with its value, for manifest.json.
func (h HomaParams) MarshalYAML() (any, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, s := range h.Settings() {
		var k, v yaml.Node
		if err := k.Encode(s.Key); err != nil {
			return nil, err
		}
		if err := v.Encode(s.Value); err != nil {
			return nil, fmt.Errorf("homa %s: %w", s.Key, err)
		}
		m.Content = append(m.Content, &k, &v)
	}
	return m, nil
}

// homaKeys is every key of a homa block: homaconf's, and extra for older
// files.
func homaKeys() []string { return append(homaconf.Keys(), "extra") }

// HomaConfig is the configuration the agents of transport t get before
// calibration on fabric f: the homa block with the fabric's link rate and
// MTU and the variant the transport's name selects (pFabric, pHost and NDP
// are the engine's variants). Validation checks this value on the
// scenario's own fabric (Scenario.Fabric), the run on the laid-out one,
// which has the same rate and MTU.
func (t Transport) HomaConfig(f *fabric.Fabric) homaconf.Config {
	c := t.Homa.Config
	c.UnschedCutoffs = append([]uint32(nil), c.UnschedCutoffs...)
	c.LinkBps, c.MTU = f.RateBps, f.MTU
	if t.Name != TransportHoma {
		c.Variant = homaconf.Variant(t.Name)
	}
	return c
}

// Fabric is the scenario's links as the one fabric description
// (internal/fabric): rate, MTU, framing, queue depth and the switch-to-
// switch hops of a path. A run adds each host's place once it has laid
// the topology out.
func (s *Scenario) Fabric() *fabric.Fabric {
	f := fabric.New(uint64(s.Link.Rate), s.Link.MTU, s.Switch.QueueDepthPkts)
	f.Framing = s.Simulation.framing()
	switch s.Topology.Kind {
	case KindLeafSpine, KindRail:
		f.InterSwitchLinks = 2 // leaf to spine, spine to leaf
		f.UplinkBps = uint64(s.Topology.UplinkRate)
	case KindFatTree:
		// Edge, aggregation, core, aggregation, edge between pods; edge,
		// aggregation, edge within one.
		f.InterSwitchLinks, f.PodLinks = 4, 2
		f.UplinkBps, f.CoreBps = uint64(s.Topology.UplinkRate), uint64(s.Topology.CoreRate)
	}
	f.EdgeUplinks, f.PodUplinks = s.Topology.edgeUplinks(), s.Topology.podUplinks()
	return f
}

// homaField is the scenario path of the field an error of
// homaconf.Config.WithDefaults names: the homa key, or the link setting
// the block takes its value from.
func homaField(p string, t Transport, key string) string {
	switch key {
	case "mtu":
		return "link.mtu"
	case "link_bps":
		return "link.rate"
	case "variant":
		if t.Homa.Variant == "" {
			return p[:strings.LastIndex(p, ".")] + ".name"
		}
	}
	return p + "." + key
}
