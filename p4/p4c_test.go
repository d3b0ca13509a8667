package p4

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
)

// p4infoFacts lists what the controller relies on in a P4Info, one line per
// object keyed by kind and name: its id and, per kind, its match fields,
// parameters, action references, implementation, sizes and units. Two
// P4Infos the controller cannot tell apart have equal facts; documentation,
// annotations and the order of objects are left out.
func p4infoFacts(info *p4configv1.P4Info) map[string]string {
	facts := map[string]string{}
	add := func(kind string, pre *p4configv1.Preamble, detail string) {
		facts[kind+" "+pre.GetName()] = fmt.Sprintf("id %#08x%s", pre.GetId(), detail)
	}
	for _, x := range info.GetTables() {
		var d strings.Builder
		for _, f := range x.GetMatchFields() {
			fmt.Fprintf(&d, "; key %d %s bit<%d> %s", f.GetId(), f.GetName(), f.GetBitwidth(), f.GetMatchType())
		}
		var refs []string
		for _, r := range x.GetActionRefs() {
			refs = append(refs, fmt.Sprintf("%#08x/%s", r.GetId(), r.GetScope()))
		}
		slices.Sort(refs) // p4c and the committed file list them in different orders
		fmt.Fprintf(&d, "; actions %v; default %#08x; implementation %#08x; size %d",
			refs, x.GetInitialDefaultAction().GetActionId(), x.GetImplementationId(), x.GetSize())
		add("table", x.GetPreamble(), d.String())
	}
	for _, x := range info.GetActions() {
		var d strings.Builder
		for _, p := range x.GetParams() {
			fmt.Fprintf(&d, "; param %d %s bit<%d>", p.GetId(), p.GetName(), p.GetBitwidth())
		}
		add("action", x.GetPreamble(), d.String())
	}
	for _, x := range info.GetActionProfiles() {
		add("action_profile", x.GetPreamble(), fmt.Sprintf("; tables %v; selector %v; size %d; max group %d",
			x.GetTableIds(), x.GetWithSelector(), x.GetSize(), x.GetMaxGroupSize()))
	}
	for _, x := range info.GetCounters() {
		add("counter", x.GetPreamble(), fmt.Sprintf("; unit %s; size %d", x.GetSpec().GetUnit(), x.GetSize()))
	}
	for _, x := range info.GetMeters() {
		add("meter", x.GetPreamble(), fmt.Sprintf("; unit %s; size %d", x.GetSpec().GetUnit(), x.GetSize()))
	}
	for _, x := range info.GetRegisters() {
		add("register", x.GetPreamble(), fmt.Sprintf("; bit<%d>; size %d", x.GetTypeSpec().GetBitstring().GetBit().GetBitwidth(), x.GetSize()))
	}
	return facts
}

// diffP4Info lists, sorted, every object whose facts differ between the
// committed P4Info and p4c's, or that only one of them has.
func diffP4Info(committed, p4c *p4configv1.P4Info) []string {
	want, got := p4infoFacts(committed), p4infoFacts(p4c)
	var diffs []string
	for k, w := range want {
		switch g, ok := got[k]; {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: only in tor.p4info.txtpb (%s)", k, w))
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s:\n\tcommitted %s\n\tp4c       %s", k, w, g))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: only in p4c's P4Info (%s)", k, g))
		}
	}
	slices.Sort(diffs)
	return diffs
}

// TestDiffP4Info: the comparison notices a changed id, a renamed parameter
// and an object one side lacks, and finds nothing between equal P4Infos.
func TestDiffP4Info(t *testing.T) {
	base, err := P4Info()
	if err != nil {
		t.Fatal(err)
	}
	if d := diffP4Info(base, base); len(d) != 0 {
		t.Fatalf("the committed P4Info differs from itself: %v", d)
	}
	tests := []struct {
		name   string
		change func(*p4configv1.P4Info)
		want   string
	}{
		{"table id", func(i *p4configv1.P4Info) { i.Tables[0].Preamble.Id++ }, "table TorIngress.ipv4_lpm:"},
		{"param name", func(i *p4configv1.P4Info) {
			for _, a := range i.Actions {
				if a.GetPreamble().GetName() == "TorIngress.set_egress" {
					a.Params[0].Name = "egress"
				}
			}
		}, "action TorIngress.set_egress:"},
		{"meter gone", func(i *p4configv1.P4Info) { i.Meters = nil }, "meter TorIngress.priority_meter: only in tor.p4info.txtpb"},
		{"selector off", func(i *p4configv1.P4Info) { i.ActionProfiles[0].WithSelector = false }, "action_profile TorIngress.uplink_selector:"},
	}
	for _, tt := range tests {
		other, _ := P4Info()
		tt.change(other)
		d := diffP4Info(base, other)
		if len(d) != 1 || !strings.HasPrefix(d[0], tt.want) {
			t.Errorf("%s: diff %q, want one line starting %q", tt.name, d, tt.want)
		}
	}
}

// TestP4InfoMatchesP4c compiles tor.p4 with p4c's BMv2 back end, where it
// is installed, and checks the P4Info p4c writes agrees with the committed
// one on every object's id, name and what the controller relies on. The
// embedded target never needs p4c; TestSourceIDsMatchP4Info checks the
// committed P4Info against tor.p4's @ids without it.
func TestP4InfoMatchesP4c(t *testing.T) {
	p4c, err := exec.LookPath("p4c-bm2-ss")
	if err != nil {
		t.Skip("p4c-bm2-ss is not on PATH: p4c's P4Info is not compared here (docs/bmv2.md says how to build p4c)")
	}
	dir := t.TempDir()
	infoPath := filepath.Join(dir, "tor.p4info.txtpb")
	out, err := exec.Command(p4c, "--p4v", "16", "--p4runtime-files", infoPath, "-o", filepath.Join(dir, "tor.json"), "tor.p4").CombinedOutput()
	if err != nil {
		t.Fatalf("p4c-bm2-ss tor.p4: %v\n%s", err, out)
	}
	if len(out) > 0 {
		t.Logf("p4c-bm2-ss says:\n%s", out)
	}
	text, err := os.ReadFile(infoPath)
	if err != nil {
		t.Fatal(err)
	}
	got := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(text, got); err != nil {
		t.Fatalf("p4c's P4Info: %v", err)
	}
	committed, err := P4Info()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffP4Info(committed, got) {
		t.Error(d)
	}
	t.Logf("compared %d objects", len(p4infoFacts(got)))
}
