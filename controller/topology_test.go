package controller

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func host(name, sw string, port int, last byte) Host {
	return Host{Name: name, IP: netip.AddrFrom4([4]byte{10, 0, 0, last}), MAC: MAC{2, 0, 0, 0, 0, last}, Switch: sw, Port: port}
}

func sw(name string, dev uint64) Switch {
	return Switch{Name: name, DeviceID: dev, Address: "127.0.0.1:" + string(rune('0'+dev)) + "559"}
}

func TestNextHopsShortestPathsAndTies(t *testing.T) {
	// A square s1-s2-s4 and s1-s3-s4, plus a tail s4-s5: s1 reaches s4 and
	// s5 over two equal paths (ports 2 and 3).
	topo := &Topology{
		Switches: []Switch{sw("s1", 1), sw("s2", 2), sw("s3", 3), sw("s4", 4), sw("s5", 5)},
		Links: []Link{
			{A: "s1", APort: 2, B: "s2", BPort: 1}, {A: "s1", APort: 3, B: "s3", BPort: 1},
			{A: "s2", APort: 2, B: "s4", BPort: 1}, {A: "s4", APort: 2, B: "s3", BPort: 2},
			{A: "s4", APort: 3, B: "s5", BPort: 1},
		},
	}
	got := topo.nextHops("s1")
	want := map[string][]int{"s2": {2}, "s3": {3}, "s4": {2, 3}, "s5": {2, 3}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("nextHops(s1) = %v, want %v", got, want)
	}
	if got := topo.nextHops("s5"); !reflect.DeepEqual(got["s1"], []int{1}) {
		t.Errorf("nextHops(s5)[s1] = %v, want [1]", got["s1"])
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		topo Topology
		want []string
	}{
		{"no switches", Topology{}, []string{"no switches"}},
		{"duplicate device and address", Topology{Switches: []Switch{sw("s1", 1), {Name: "s2", DeviceID: 1, Address: "127.0.0.1:1559"}}},
			[]string{"device_id 1 already used", "address 127.0.0.1:1559 already used"}},
		{"port clash and range", Topology{Switches: []Switch{sw("s1", 1)}, Hosts: []Host{host("h1", "s1", 1, 1), host("h2", "s1", 1, 2), host("h3", "s1", 64, 3)}},
			[]string{"port s1:1 already used", "port 64 outside 1..63"}},
		{"duplicate ip and mac", Topology{Switches: []Switch{sw("s1", 1)}, Hosts: []Host{host("h1", "s1", 1, 1), host("h2", "s1", 2, 1)}},
			[]string{"ip 10.0.0.1 already used", "mac 02:00:00:00:00:01 already used"}},
		{"unknown switch", Topology{Switches: []Switch{sw("s1", 1)}, Hosts: []Host{host("h1", "s9", 1, 1)}},
			[]string{`switch "s9" is not declared`}},
		{"unreachable host", Topology{Switches: []Switch{sw("s1", 1), sw("s2", 2)}, Hosts: []Host{host("h1", "s1", 1, 1), host("h2", "s2", 1, 2)}},
			[]string{`host "h2" (on "s2") is unreachable from switch "s1"`, `host "h1" (on "s1") is unreachable from switch "s2"`}},
		{"host and switch share a name", Topology{Switches: []Switch{sw("s1", 1)}, Hosts: []Host{host("s1", "s1", 1, 1)}},
			[]string{"name already used by a switch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.topo.validate()
			if err == nil {
				t.Fatal("Validate accepted a bad topology")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestLoadTopologyYAML(t *testing.T) {
	const doc = `
switches:
  - {name: s1, device_id: 1, address: "127.0.0.1:9559"}
  - {name: s2, device_id: 2, address: "127.0.0.1:9560", ports: [1, 2, 9]}
hosts:
  - {name: h1, ip: 10.0.0.1, mac: "02:00:00:00:00:01", switch: s1, port: 1}
  - {name: h2, ip: 10.0.0.2, mac: "02:00:00:00:00:02", switch: s2, port: 1}
links:
  - {a: s1, a_port: 9, b: s2, b_port: 9}
`
	dir := t.TempDir()
	good := filepath.Join(dir, "topo.yaml")
	if err := os.WriteFile(good, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	topo, err := LoadTopology(good)
	if err != nil {
		t.Fatal(err)
	}
	if topo.Hosts[1].MAC != (MAC{2, 0, 0, 0, 0, 2}) || topo.Hosts[1].IP != netip.MustParseAddr("10.0.0.2") {
		t.Errorf("host h2 = %+v", topo.Hosts[1])
	}
	if got := topo.switchPorts("s1"); !reflect.DeepEqual(got, []int{1, 9}) {
		t.Errorf("switchPorts(s1) = %v, want derived [1 9]", got)
	}
	if got := topo.switchPorts("s2"); !reflect.DeepEqual(got, []int{1, 2, 9}) {
		t.Errorf("switchPorts(s2) = %v, want declared [1 2 9]", got)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(doc, "device_id: 2", "device_id: 2, colour: red", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTopology(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "colour") {
		t.Errorf("LoadTopology(unknown key) = %v, want an error naming the file and the key", err)
	}
}
