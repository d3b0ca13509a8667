package p4

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// oneAtATime is the Jenkins one-at-a-time hash p4c uses for ids without @id.
func oneAtATime(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h += uint32(s[i])
		h += h << 10
		h ^= h >> 6
	}
	h += h << 3
	h ^= h >> 11
	h += h << 15
	return h
}

func TestP4InfoIDPrefixes(t *testing.T) {
	info, err := P4Info()
	if err != nil {
		t.Fatal(err)
	}
	check := func(kind string, pre *p4configv1.Preamble, prefix p4configv1.P4Ids_Prefix) {
		t.Helper()
		if got := pre.GetId() >> 24; got != uint32(prefix) {
			t.Errorf("%s %s: id %#08x has prefix %#02x, want %#02x", kind, pre.GetName(), pre.GetId(), got, uint32(prefix))
		}
	}
	for _, x := range info.GetTables() {
		check("table", x.GetPreamble(), p4configv1.P4Ids_TABLE)
	}
	for _, x := range info.GetActions() {
		check("action", x.GetPreamble(), p4configv1.P4Ids_ACTION)
	}
	for _, x := range info.GetCounters() {
		check("counter", x.GetPreamble(), p4configv1.P4Ids_COUNTER)
	}
	for _, x := range info.GetRegisters() {
		check("register", x.GetPreamble(), p4configv1.P4Ids_REGISTER)
	}
	for _, x := range info.GetActionProfiles() {
		check("action profile", x.GetPreamble(), p4configv1.P4Ids_ACTION_PROFILE)
	}
	for _, x := range info.GetMeters() {
		check("meter", x.GetPreamble(), p4configv1.P4Ids_METER)
	}
	if got := uint32(len(info.GetTables()) + len(info.GetActions()) + len(info.GetCounters()) + len(info.GetRegisters()) + len(info.GetActionProfiles()) + len(info.GetMeters())); got != 38 {
		t.Errorf("P4Info has %d objects, the contract lists 38", got)
	}
}

func TestNoActionIsP4cHash(t *testing.T) {
	want := uint32(p4configv1.P4Ids_ACTION)<<24 | oneAtATime("NoAction")&0xffffff
	if ActionNoAction != want {
		t.Errorf("ActionNoAction = %#08x, p4c would assign %#08x", ActionNoAction, want)
	}
}

func TestConstantsMatchP4Info(t *testing.T) {
	info, err := P4Info()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint32{}
	for _, x := range info.GetTables() {
		ids[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
	}
	for _, x := range info.GetActions() {
		ids[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
	}
	for _, x := range info.GetCounters() {
		ids[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
	}
	for _, x := range info.GetRegisters() {
		ids[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
	}
	for _, x := range info.GetActionProfiles() {
		ids[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
	}
	for _, x := range info.GetMeters() {
		ids[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
	}
	for _, tc := range []struct {
		name string
		id   uint32
	}{
		{"TorIngress.ipv4_lpm", TableIPv4LPM},
		{"TorIngress.dscp_to_queue", TableDSCPToQueue},
		{"TorIngress.arp_proxy", TableARPProxy},
		{"TorEgress.ecn_config", TableECNConfig},
		{"TorIngress.port_mode", TablePortMode},
		{"NoAction", ActionNoAction},
		{"TorIngress.drop", ActionDrop},
		{"TorIngress.ipv4_forward", ActionIPv4Forward},
		{"TorIngress.set_queue", ActionSetQueue},
		{"TorIngress.arp_reply", ActionARPReply},
		{"TorEgress.set_ecn_threshold", ActionSetECNThreshold},
		{"TorEgress.set_ecn_red", ActionSetECNRED},
		{"TorIngress.strict_priority", ActionStrictPriority},
		{"TorIngress.rank_order", ActionRankOrder},
		{"TorIngress.trim_above", ActionTrimAbove},
		{"TorIngress.ingress_queue_counter", CounterIngressQueue},
		{"TorEgress.egress_queue_counter", CounterEgressQueue},
		{"TorEgress.queue_depth", RegisterQueueDepth},
		{"TorEgress.queue_peak", RegisterQueuePeak},
		{"TorEgress.queue_delay", RegisterQueueDelay},
		{"TorIngress.load_balance", TableLoadBalance},
		{"TorIngress.nexthop_group", TableNexthop},
		{"TorIngress.ecmp_forward", ActionECMPForward},
		{"TorIngress.set_egress", ActionSetEgress},
		{"TorIngress.flow_hash", ActionFlowHash},
		{"TorIngress.spray", ActionSpray},
		{"TorIngress.uplink_selector", ProfileUplinkSelector},
		{"TorIngress.spray_seq", RegisterSpraySeq},
		{"TorIngress.ingress_defence", TableDefence},
		{"TorIngress.source_guard", TableSourceGuard},
		{"TorIngress.meter_select", TableMeterSelect},
		{"TorIngress.port_defence", ActionPortDefence},
		{"TorIngress.source_ok", ActionSourceOK},
		{"TorIngress.use_meter", ActionUseMeter},
		{"TorIngress.remark_counter", CounterRemark},
		{"TorIngress.meter_counter", CounterMeter},
		{"TorIngress.spoof_counter", CounterSpoof},
		{"TorIngress.priority_meter", MeterPriority},
	} {
		if got, ok := ids[tc.name]; !ok || got != tc.id {
			t.Errorf("%s: P4Info id %#08x (present %v), constant %#08x", tc.name, got, ok, tc.id)
		}
	}
}

var (
	controlRe = regexp.MustCompile(`^control (\w+)\(`)
	idRe      = regexp.MustCompile(`^\s*@id\((0x[0-9a-fA-F]+)\)\s*$`)
	declRe    = regexp.MustCompile(`^\s*(?:action|table)\s+(\w+)|^\s*(?:counter|register|action_selector|meter)\b.*\)\s*(\w+);`)
	paramRe   = regexp.MustCompile(`@id\((\d+)\) bit<(\d+)> (\w+)`)
	tableRe   = regexp.MustCompile(`^\s*table\s`)
	keyRe     = regexp.MustCompile(`^\s*([\w.]+)\s*:\s*(\w+)\s+@id\((\d+)\);`)
)

// TestSourceIDsMatchP4Info reads every @id in tor.p4 (objects, action
// parameters, match fields) and checks the P4Info carries the same id under
// the same fully qualified name, so p4c would emit this P4Info.
func TestSourceIDsMatchP4Info(t *testing.T) {
	info, err := P4Info()
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]uint32{}
	params := map[string]map[string][2]int{} // action -> param -> {id, width}
	keys := map[string]map[string][2]int{}   // table -> field -> {id, match type}
	for _, x := range info.GetTables() {
		objects[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
		m := map[string][2]int{}
		for _, f := range x.GetMatchFields() {
			m[f.GetName()] = [2]int{int(f.GetId()), int(f.GetMatchType())}
		}
		keys[x.GetPreamble().GetName()] = m
	}
	for _, x := range info.GetActions() {
		objects[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
		m := map[string][2]int{}
		for _, p := range x.GetParams() {
			m[p.GetName()] = [2]int{int(p.GetId()), int(p.GetBitwidth())}
		}
		params[x.GetPreamble().GetName()] = m
	}
	for _, x := range info.GetCounters() {
		objects[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
	}
	for _, x := range info.GetRegisters() {
		objects[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
	}
	for _, x := range info.GetActionProfiles() {
		objects[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
	}
	for _, x := range info.GetMeters() {
		objects[x.GetPreamble().GetName()] = x.GetPreamble().GetId()
	}

	var control, table string
	pending := uint64(0)
	seen := map[string]bool{"NoAction": true} // declared in core.p4
	sc := bufio.NewScanner(bytes.NewReader(source))
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if m := controlRe.FindStringSubmatch(text); m != nil {
			control = m[1]
		}
		if m := idRe.FindStringSubmatch(text); m != nil {
			pending, err = strconv.ParseUint(m[1], 0, 32)
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			continue
		}
		if pending != 0 {
			m := declRe.FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("line %d: @id not followed by a declaration: %q", line, text)
			}
			name := control + "." + m[1] + m[2]
			if got, ok := objects[name]; !ok || uint64(got) != pending {
				t.Errorf("line %d: %s has @id %#08x in tor.p4, P4Info id %#08x (present %v)", line, name, pending, got, ok)
			}
			seen[name] = true
			if tableRe.MatchString(text) {
				table = name
			}
			for _, p := range paramRe.FindAllStringSubmatch(text, -1) {
				id, _ := strconv.Atoi(p[1])
				width, _ := strconv.Atoi(p[2])
				if got := params[name][p[3]]; got != [2]int{id, width} {
					t.Errorf("line %d: %s param %s is id %d bit<%d>, P4Info has %v", line, name, p[3], id, width, got)
				}
			}
			pending = 0
			continue
		}
		if m := keyRe.FindStringSubmatch(text); m != nil && table != "" {
			id, _ := strconv.Atoi(m[3])
			want := map[string]int{"exact": int(p4configv1.MatchField_EXACT), "lpm": int(p4configv1.MatchField_LPM), "ternary": int(p4configv1.MatchField_TERNARY)}[m[2]]
			if got := keys[table][m[1]]; got != [2]int{id, want} {
				t.Errorf("line %d: %s key %s is id %d %s, P4Info has %v", line, table, m[1], id, m[2], got)
			}
		}
	}
	for name := range objects {
		if !seen[name] {
			t.Errorf("P4Info object %s has no @id in tor.p4", name)
		}
	}
}

func TestQueueIndexFitsSlots(t *testing.T) {
	if got := QueueIndex(MaxPort, QueuesPerPort-1); got >= QueueSlots {
		t.Errorf("QueueIndex(%d, %d) = %d, not below %d", MaxPort, QueuesPerPort-1, got, QueueSlots)
	}
	if QueueIndex(1, 0) == QueueIndex(0, QueuesPerPort-1) {
		t.Error("port 1 queue 0 and port 0 queue 7 share an index")
	}
}
