package reports

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/reports/stats"
)

func TestTCPConns(t *testing.T) {
	dir := t.TempDir()
	synthRun{seed: 2, lengths: []int64{100}, noTel: true, exps: []synthExp{{name: "c-tcp", transport: "tcp", n: 50, meanNs: 1000}}}.write(t, dir)
	tcp := "experiment,host,peer,conn,unix_ns,cwnd_segs,srtt_us,rttvar_us,retrans,delivered_ce\n" +
		"c-tcp,h2,10.0.0.1:4000,0,1,10,100,5,3,0\n" +
		"c-tcp,h2,10.0.0.1:4000,0,2,20,300,5,4,7\n" +
		"c-tcp,h2,10.0.0.1:4000,0,3,30,200,5,6,9\n" +
		"c-tcp,h3,10.0.0.1:4000,0,1,4,50,5,0,0\n"
	if err := os.WriteFile(filepath.Join(dir, "tcp.csv"), []byte(tcp), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := sum.Experiments[0].TCPConns
	if len(c) != 2 {
		t.Fatalf("%d connections, want 2: %+v", len(c), c)
	}
	want := stats.TCPConn{Host: "h2", Peer: "10.0.0.1:4000", Samples: 3, MeanCwnd: 20, MaxCwnd: 30, SRTTP50us: 200, SRTTP99us: 300, Retrans: 3, DeliveredCE: 9}
	if c[0] != want {
		t.Errorf("h2's connection %+v, want %+v", c[0], want)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "c-tcp: TCP connections") {
		t.Error("report.html lacks the TCP connections table")
	}
}
