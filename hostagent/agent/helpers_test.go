package agent

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
)

// dialAgent connects to an agent's control socket.
func dialAgent(t *testing.T, socket string) agentpb.AgentClient {
	t.Helper()
	cc, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return agentpb.NewAgentClient(cc)
}

// startAgent runs an in-process agent on a socket in a temporary folder
// and returns its client; the agent stops at cleanup.
func startAgent(t *testing.T, name string) (agentpb.AgentClient, string) {
	t.Helper()
	dir := t.TempDir()
	socket := filepath.Join(dir, name+".sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := runAgent(t, ctx, Options{Socket: socket, Name: name, RecordsDir: dir})
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent %s: %v", name, err)
		}
	})
	return dialAgent(t, socket), dir
}

// fetchRecords reads an experiment's records through the control API.
func fetchRecords(t *testing.T, c agentpb.AgentClient, exp string) [][]string {
	t.Helper()
	return fetchFile(t, c, exp, agentpb.FileRecords)
}

// fetchFile reads one of an experiment's files through the control API.
func fetchFile(t *testing.T, c agentpb.AgentClient, exp, file string) [][]string {
	t.Helper()
	stream, err := c.FetchRecords(t.Context(), &agentpb.FetchRecordsRequest{Experiment: exp, File: file})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("fetching records of %s: %v", exp, err)
		}
		buf.Write(chunk.GetData())
	}
	return parseCSV(t, &buf)
}

// readCSV reads a records file from disk.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return parseCSV(t, f)
}

func parseCSV(t *testing.T, r io.Reader) [][]string {
	t.Helper()
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		t.Fatalf("records are not CSV: %v", err)
	}
	if len(rows) == 0 {
		t.Fatal("records have no header")
	}
	return rows
}

// checkBooks verifies the records against the counters: one row per issued
// RPC, statuses adding up, times consistent, RTT from the intended time.
func checkBooks(t *testing.T, rows [][]string, c *agentpb.Counters, transport string) {
	t.Helper()
	if c.GetIssued() != c.GetCompleted()+c.GetFailed()+c.GetInFlight() {
		t.Errorf("books: issued %d != completed %d + failed %d + in flight %d",
			c.GetIssued(), c.GetCompleted(), c.GetFailed(), c.GetInFlight())
	}
	header := rundir.RPCs().Header()
	if len(rows[0]) != len(header) {
		t.Fatalf("header %v, want %v", rows[0], header)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		if h != header[i] {
			t.Fatalf("header %v, want %v", rows[0], header)
		}
		col[h] = i
	}
	if got := uint64(len(rows) - 1); got != c.GetIssued() {
		t.Errorf("%d records for %d issued RPCs", got, c.GetIssued())
	}
	count := map[string]uint64{}
	num := func(row []string, name string) int64 {
		v, err := strconv.ParseInt(row[col[name]], 10, 64)
		if err != nil {
			t.Fatalf("column %s = %q: %v", name, row[col[name]], err)
		}
		return v
	}
	for _, row := range rows[1:] {
		st := row[col["status"]]
		count[st]++
		if row[col["transport"]] != transport {
			t.Errorf("transport %q, want %q", row[col["transport"]], transport)
		}
		intended, sent, done, rtt := num(row, "intended_ns"), num(row, "sent_ns"), num(row, "done_ns"), num(row, "rtt_ns")
		if sent < intended || sent == 0 {
			t.Errorf("sent %d before intended %d", sent, intended)
		}
		switch st {
		case rundir.StatusCompleted:
			if done < sent || rtt != done-intended {
				t.Errorf("completed RPC: intended %d sent %d done %d rtt %d", intended, sent, done, rtt)
			}
		case rundir.StatusFailed:
			if row[col["error"]] == "" || rtt != 0 {
				t.Errorf("failed RPC without an error or with an RTT: %v", row)
			}
		case rundir.StatusInflight:
			if done != 0 || rtt != 0 {
				t.Errorf("in-flight RPC with a completion: %v", row)
			}
		default:
			t.Errorf("status %q", st)
		}
	}
	if count[rundir.StatusCompleted] != c.GetCompleted() || count[rundir.StatusFailed] != c.GetFailed() || count[rundir.StatusInflight] != c.GetInFlight() {
		t.Errorf("records by status %v, counters completed %d failed %d in flight %d",
			count, c.GetCompleted(), c.GetFailed(), c.GetInFlight())
	}
}

// checkTransportTimes verifies the transport's own times of completed
// RPCs: the response's first byte between sent and done, for Homa the
// request's last byte out between sent and that; TCP cannot tell when its
// buffered request left, and says 0.
func checkTransportTimes(t *testing.T, rows [][]string, transport string) {
	t.Helper()
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(row []string, name string) int64 {
		v, err := strconv.ParseInt(row[col[name]], 10, 64)
		if err != nil {
			t.Fatalf("column %s = %q: %v", name, row[col[name]], err)
		}
		return v
	}
	checked := 0
	for _, row := range rows[1:] {
		if row[col["status"]] != rundir.StatusCompleted {
			continue
		}
		sent, done, out, first := num(row, "sent_ns"), num(row, "done_ns"), num(row, "req_out_ns"), num(row, "first_resp_ns")
		if first < sent || first > done {
			t.Fatalf("first response byte at %d, outside sent %d .. done %d: %v", first, sent, done, row)
		}
		switch {
		case transport == "tcp" && out != 0:
			t.Fatalf("tcp row with a request-out time: %v", row)
		case transport == "homa" && (out < sent || out > first):
			t.Fatalf("request out at %d, outside sent %d .. first response byte %d: %v", out, sent, first, row)
		case transport == "homa" && row[col["rpc_id"]] == "0":
			t.Fatalf("homa row without its RPC id: %v", row)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no completed RPC to check")
	}
}

// waitIssued polls Status until the agent has issued at least n RPCs.
func waitIssued(t *testing.T, c agentpb.AgentClient, n uint64, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if statusOnce(t, c).GetIssued() >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("fewer than %d RPCs issued after %v", n, limit)
}

// statusOnce reads one Status report.
func statusOnce(t *testing.T, api agentpb.AgentClient) *agentpb.Counters {
	t.Helper()
	return statusReplyOnce(t, api).GetCounters()
}

// statusReplyOnce is the agent's Status reply, once.
func statusReplyOnce(t *testing.T, api agentpb.AgentClient) *agentpb.StatusReply {
	t.Helper()
	st, err := api.Status(t.Context(), &agentpb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readRows reads parsed CSV rows (header first) through a run-directory
// format, as the orchestrator and reports do.
func readRows[T any](t *testing.T, f *rundir.CSVFormat[T], rows [][]string) []T {
	t.Helper()
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	rd, err := f.NewReader(&buf, f.File)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for {
		var v T
		if err := rd.Read(&v); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
}
