package rundir

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/p4/switchstats"
)

// roundTrip writes rows with f and reads them back.
func roundTrip[T any](t *testing.T, f *CSVFormat[T], rows []T) []T {
	t.Helper()
	var buf bytes.Buffer
	w, err := f.NewWriter(&buf, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if err := w.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(buf.String(), "\n"); first != strings.Join(f.Header(), ",") {
		t.Fatalf("%s: header line %q", f.File, first)
	}
	r, err := f.NewReader(&buf, f.File)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for {
		var v T
		if err := r.Read(&v); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
}

func TestRoundTrip(t *testing.T) {
	rpcs := []RPC{
		{Experiment: "e", Transport: "homa", Phase: PhaseMeasure, Client: "h2", Server: "10.0.0.1:4000",
			ReqBytes: 100, RespBytes: 1000000, IntendedNs: 10, SentNs: 12, DoneNs: 110, Status: StatusCompleted,
			Retries: 2, ReqOutNs: 20, FirstRespNs: 50, GrantsIn: 3, GrantsOut: 4, RPCID: 1 << 62},
		{Experiment: "e", Transport: "tcp", Phase: PhaseWarmup, Client: "h3", Server: "10.0.0.1:4001",
			ReqBytes: 5, IntendedNs: 10, SentNs: 11, DoneNs: 99, Status: StatusFailed, Error: `a "quoted", reason`},
	}
	got := roundTrip(t, RPCs(), rpcs)
	rpcs[0].RTTNs = 100 // derived for completed rows only
	if !reflect.DeepEqual(got, rpcs) {
		t.Errorf("rpcs.csv:\n got %+v\nwant %+v", got, rpcs)
	}
	tel := []TelemetryRow{{Experiment: "e", TelemetrySample: TelemetrySample{Switch: "s1", UnixNano: 7, Port: 2, Queue: 7,
		EnqPkts: 1, EnqBytes: 2, SentPkts: 3, SentBytes: 4, DepthPkts: 5, PeakPkts: 6, DelayUS: 8}}}
	if got := roundTrip(t, Telemetry(), tel); !reflect.DeepEqual(got, tel) {
		t.Errorf("telemetry.csv: got %+v, want %+v", got, tel)
	}
	hosts := []HostSample{{Experiment: "e", Host: "h1", UnixNs: 9, Active: 2, Incoming: 60000}}
	if got := roundTrip(t, Hosts(), hosts); !reflect.DeepEqual(got, hosts) {
		t.Errorf("hosts.csv: got %+v, want %+v", got, hosts)
	}
}

// TestWriteTelemetry checks that a shared file gets one header.
func TestWriteTelemetry(t *testing.T) {
	var buf bytes.Buffer
	s := []TelemetrySample{{Switch: "s1", Port: 1}, {Switch: "s1", Port: 2}}
	if err := WriteTelemetry(&buf, "a", s, true); err != nil {
		t.Fatal(err)
	}
	if err := WriteTelemetry(&buf, "b", s, false); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "experiment,switch"); n != 1 {
		t.Errorf("%d headers in\n%s", n, buf.String())
	}
	if n := strings.Count(buf.String(), "\n"); n != 5 {
		t.Errorf("%d lines, want 5:\n%s", n, buf.String())
	}
}

func TestReadRPCs(t *testing.T) {
	const full = "experiment,transport,phase,client,server,req_bytes,resp_bytes,intended_ns,sent_ns,done_ns,rtt_ns,status,error,retries"
	tests := []struct {
		name    string
		in      string
		want    RPC
		wantErr string // substring of the error; "" for none
	}{
		{name: "written before the transport times: they read as 0",
			in:   full + "\ne,homa,measure,h2,s:1,100,100,1,2,3001,3000,completed,,0\n",
			want: RPC{Experiment: "e", Transport: "homa", Phase: "measure", Client: "h2", Server: "s:1", ReqBytes: 100, RespBytes: 100, IntendedNs: 1, SentNs: 2, DoneNs: 3001, RTTNs: 3000, Status: "completed"}},
		{name: "columns in another order and one unknown",
			in:   "status,extra,rtt_ns,req_bytes,experiment,transport,phase,client,server,resp_bytes,intended_ns,sent_ns,done_ns,error,retries\ncompleted,x,5,7,e,tcp,measure,h2,s:1,9,1,2,6,,0\n",
			want: RPC{Experiment: "e", Transport: "tcp", Phase: "measure", Client: "h2", Server: "s:1", ReqBytes: 7, RespBytes: 9, IntendedNs: 1, SentNs: 2, DoneNs: 6, RTTNs: 5, Status: "completed"}},
		{name: "missing columns are named",
			in: "experiment,transport\ne,homa\n", wantErr: "header lacks columns [phase req_bytes rtt_ns status]"},
		{name: "a bad number names line and column",
			in: full + "\ne,homa,measure,h2,s:1,100,100,1,2,3001,3000,completed,,0\ne,homa,measure,h2,s:1,1e3,100,1,2,3001,3000,completed,,0\n", wantErr: "in.csv line 3: column req_bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := RPCs().NewReader(strings.NewReader(tc.in), "in.csv")
			var got RPC
			for err == nil {
				var v RPC
				if err = r.Read(&v); err == nil && got.Experiment == "" {
					got = v
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestEmptyFile(t *testing.T) {
	r, err := Hosts().NewReader(strings.NewReader(""), "hosts.csv")
	if err != nil {
		t.Fatal(err)
	}
	var v HostSample
	if !r.Empty() || !errors.Is(r.Read(&v), io.EOF) {
		t.Error("an empty file should read as no rows")
	}
}

func TestMergeCounters(t *testing.T) {
	dst := map[string]uint64{}
	MergeCounters(dst, map[string]uint64{"homa_tx_grant_p7": 10, "homa_active_max": 3, "homa_incoming_bytes": 9000})
	MergeCounters(dst, map[string]uint64{"homa_tx_grant_p7": 5, "homa_active_max": 7, "homa_incoming_bytes": 100, "tcp_calls": 4})
	want := map[string]uint64{"homa_tx_grant_p7": 15, "homa_active_max": 7, "homa_incoming_bytes": 9000, "tcp_calls": 4}
	if !reflect.DeepEqual(dst, want) {
		t.Errorf("merged %v, want %v (counts sum, gauges take the maximum)", dst, want)
	}
}

func TestManifestFile(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := ReadManifest(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing manifest: %v, want fs.ErrNotExist", err)
	}
	m := &Manifest{Run: "r", LinkBps: 50_000_000, Calibration: map[string]Calibration{"homa": {RTTus: map[uint32]float64{100: 210.5}}},
		Experiments: []Experiment{{Name: "x", Params: map[string]string{"a": "1"}, WarmupMs: 2000, RPCs: Books{Issued: 3, Completed: 2, InFlight: 1},
			Hosts: []HostCounters{{Host: "h1", Role: RoleServer, Transport: map[string]uint64{"homa_x": 1}}}}}}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	got, raw, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("read back %+v, want %+v", got, m)
	}
	if !bytes.Contains(raw, []byte(`"rtt_us": {`)) || !bytes.Contains(raw, []byte(`"in_flight": 1`)) {
		t.Errorf("manifest.json lacks the documented keys:\n%s", raw)
	}
}

func TestSwitchStatsFiles(t *testing.T) {
	dir := t.TempDir()
	for _, sw := range []string{"s2", "s1"} {
		st := SwitchStats{DeviceID: 1, Ports: []switchstats.Port{{Port: 1, Iface: sw + "-eth1"}}}
		if err := WriteSwitchStats(dir, "exp", sw, st); err != nil {
			t.Fatal(err)
		}
	}
	files, err := ReadSwitchStats(dir, "exp")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Switch != "s1" || files[1].Stats.Ports[0].Iface != "s2-eth1" {
		t.Errorf("read %+v", files)
	}
	if none, err := ReadSwitchStats(dir, "other"); err != nil || len(none) != 0 {
		t.Errorf("an experiment without statistics: %v, %v", none, err)
	}
}

func TestPostcardsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := PostcardsPath(dir, "exp1", "s1")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	want := []Postcard{
		{ArrivalNs: 10, EnqueueNs: 10, DequeueNs: 250_010, IngressPort: 1, EgressPort: 3, Queue: 7,
			Kind: switchstats.KindHoma, HomaType: 0x10, IPProto: 146, FrameLen: 142, RPCID: 42},
		{ArrivalNs: 20, EnqueueNs: 20, DequeueNs: 30, IngressPort: 2, EgressPort: 3,
			Kind: switchstats.KindTCP, IPProto: 6, FrameLen: 1514, Seq: 7, PayloadLen: 1448},
	}
	b := switchstats.AppendPostcardHeader(nil, 1_700_000_000_000_000_000)
	for _, p := range want {
		var rec [switchstats.PostcardLen]byte
		p.Encode(&rec)
		b = append(b, rec[:]...)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var got []Postcard
	epoch, err := ReadPostcards(dir, "exp1", "s1", func(p *Postcard) error {
		got = append(got, *p)
		return nil
	})
	if err != nil || epoch != 1_700_000_000_000_000_000 {
		t.Fatalf("epoch %d, %v", epoch, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, err := ReadPostcards(dir, "exp2", "s1", func(*Postcard) error { return nil }); err == nil {
		t.Error("missing file read without error")
	}
}

func TestAgentFile(t *testing.T) {
	tests := []struct{ exp, host, want string }{
		{"lc-homa", "h2", "lc-homa-h2.rpcs.csv"},
		{"a/b c", "h1", "a_b_c-h1.rpcs.csv"},
	}
	for _, tc := range tests {
		if got := AgentFile(tc.exp, tc.host, RPCs()); got != tc.want {
			t.Errorf("AgentFile(%q, %q) = %q, want %q", tc.exp, tc.host, got, tc.want)
		}
	}
	if got := AgentFile("x", "h1", ServedRPCs()); got != "x-h1.served.csv" {
		t.Errorf("served file %q", got)
	}
}
