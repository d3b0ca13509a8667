package dissector

import (
	"path/filepath"
	"strings"
	"testing"
)

// wantInfo is the Info column of some of cases' packets.
var wantInfo = map[string]string{
	"data request":          "DATA id=72623859790382856 off=82257/1122867 len=300 retx incast prio=5",
	"data response":         "DATA id=72623859790382856 resp off=0/100 len=100 prio=2",
	"data ranked (pFabric)": "DATA id=723685415333072912 off=2848/50000 len=1424 prio=0 rank=214375",
	"data trimmed (NDP)":    "DATA id=723685415333072912 off=4272/50000 len=0 TRIMMED prio=7",
	"grant":                 "GRANT id=72623859790382856 resp off=16909060 grant_prio=6 prio=7",
	"resend all":            "RESEND id=72623859790382856 off=0 len=all resend_prio=7 prio=7",
	"busy":                  "BUSY id=72623859790382856 prio=7",
	"cutoffs":               "CUTOFFS id=72623859790382856 resp version=2057 prio=7",
	"ack of 2":              "ACK id=72623859790382856 acks=2 prio=7",
	"start_msg incast":      "START_MSG id=72623859790382856 len=33752069 incast prio=4",
	"pull":                  "PULL id=723685415333072912 count=168496141 prio=7",
	"nack":                  "NACK id=723685415333072912 off=4272 len=1424 prio=7",
	"data cut by snaplen":   "DATA id=72623859790382856 resp off=?/100 len=100 prio=3",
	"truncated grant":       "GRANT id=72623859790382856 off=? grant_prio=? prio=0 [MALFORMED]",
	"unknown type":          "homatb type 0x30 id=72623859790382856 [MALFORMED]",
	"ack of 6":              "ACK id=72623859790382856 acks=6 prio=0 [INVALID: 6 acks]",
	"data offset beyond length": "DATA id=72623859790382856 off=100/100 len=0 prio=0 " +
		"[INVALID: offset 100 beyond length 100; no payload]",
}

// TestInfoColumn checks the protocol column and the one-line summary of
// packets, and that every packet wire refuses is marked there.
func TestInfoColumn(t *testing.T) {
	cs := cases()
	frames := make([]frame, len(cs))
	for i, c := range cs {
		frames[i] = c.frame(i)
	}
	out := tshark(t, writeCapture(t, t.TempDir(), frames), "-T", "fields", "-e", "_ws.col.Protocol", "-e", "_ws.col.Info")
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(cs) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(cs), out)
	}
	seen := 0
	for i, c := range cs {
		proto, info, _ := strings.Cut(lines[i], "\t")
		if proto != "homatb" {
			t.Errorf("%s: protocol column %q", c.name, proto)
		}
		if want, ok := wantInfo[c.name]; ok {
			seen++
			if info != want {
				t.Errorf("%s: Info\n%q, want\n%q", c.name, info, want)
			}
		}
		_, werr := parse(c.b)
		marked := strings.Contains(info, "[MALFORMED]") || strings.Contains(info, "[INVALID")
		if marked != (werr != nil) {
			t.Errorf("%s: Info %q; wire's decoder says %v", c.name, info, werr)
		}
	}
	if seen != len(wantInfo) {
		t.Errorf("%d of wantInfo's %d cases exist", seen, len(wantInfo))
	}
}

// TestLoadedTwice runs tshark with the dissector both installed in the
// plugin folder and named with -X, as a user who ran `homatb dissector
// --install` and then copies a report's tshark command would: the second
// copy steps aside instead of failing to load (tshark's stderr must stay
// clean) and packets still decode.
func TestLoadedTwice(t *testing.T) {
	capture := writeCapture(t, t.TempDir(), []frame{cases()[0].frame(0)})
	out := runTshark(t, func(lua string) []string {
		plugins := filepath.Join(filepath.Dir(lua), ".local", "lib", "wireshark", "plugins")
		if err := Write(filepath.Join(plugins, FileName)); err != nil {
			t.Fatal(err)
		}
		return []string{"-n", "-X", "lua_script:" + lua, "-r", capture, "-T", "fields", "-e", "homatb.type"}
	})
	if got := strings.TrimSpace(string(out)); got != "0x10" {
		t.Errorf("homatb.type %q, want 0x10", got)
	}
}
