package dispatch

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/homatb/homatb/rundir"
)

// TestFrameLen: the walk over a frame's headers ends where the encoder's
// frame ends, for frames of every kind of block (compressed, raw, RLE),
// with and without a checksum and a content size, one or several blocks,
// and it refuses what is not a whole frame.
func TestFrameLen(t *testing.T) {
	random := make([]byte, 300<<10) // incompressible: raw blocks
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	text := bytes.Repeat([]byte("calibrate-homa,homa,calibrate,h2,10.0.1.1:4000,100\n"), 20000)
	zeros := make([]byte, 1<<20) // RLE blocks
	stream := func(b []byte, opts ...zstd.EOption) []byte {
		var out bytes.Buffer
		enc, err := zstd.NewWriter(&out, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := enc.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	all := func(b []byte, opts ...zstd.EOption) []byte {
		enc, err := zstd.NewWriter(nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return enc.EncodeAll(b, nil)
	}
	cases := []struct {
		name  string
		frame []byte
	}{
		{"empty, one call", all(nil, zstd.WithZeroFrames(true))},
		{"text, one call", all(text)},
		{"text, one call, no checksum", all(text, zstd.WithEncoderCRC(false))},
		{"text, stream of two goroutines", stream(text, zstd.WithEncoderConcurrency(2))},
		{"text, stream, no content size", stream(text, zstd.WithEncoderConcurrency(1))},
		{"random (raw blocks)", stream(random)},
		{"zeros (RLE blocks)", stream(zeros)},
		{"zeros, one call", all(zeros, zstd.WithSingleSegment(true))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A second frame after it: the walk stops at the first's end.
			b := append(bytes.Clone(c.frame), all([]byte("next"))...)
			n, err := frameLen(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(c.frame)) {
				t.Errorf("frameLen = %d, want the frame's %d bytes", n, len(c.frame))
			}
		})
	}
	bad := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"not zstd", []byte("experiment,transport\n")},
		{"cut in a block header", all(text)[:7]},
	}
	for _, c := range bad {
		t.Run("bad "+c.name, func(t *testing.T) {
			if n, err := frameLen(bytes.NewReader(c.b)); err == nil {
				t.Errorf("frameLen = %d, want an error", n)
			}
		})
	}
}

// TestCompressTask: a task's file compresses in two frames, the first
// its header and calibration rows, and decompresses to the plain file.
func TestCompressTask(t *testing.T) {
	header := "experiment,transport\n"
	cases := []struct {
		name, body string
		// head is the first frame's content; "" leaves the whole file in it.
		head string
	}{
		{"calibration and experiment", "calibrate-homa,homa\ncalibrate-ndp,ndp\na,homa\nb,homa\n", "calibrate-homa,homa\ncalibrate-ndp,ndp\n"},
		{"no calibration", "a,homa\nb,homa\n", ""},
		{"calibration alone", "calibrate-homa,homa\n", "calibrate-homa,homa\n"},
		{"no final newline", "calibrate-homa,homa\na,homa", "calibrate-homa,homa\n"},
		{"header alone", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			plain := filepath.Join(dir, rundir.RPCs().File)
			if err := os.WriteFile(plain, []byte(header+c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := CompressTask(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(plain); err == nil {
				t.Error("the plain file is still there")
			}
			b, err := os.ReadFile(plain + rundir.ZstdExt)
			if err != nil {
				t.Fatal(err)
			}
			n, err := frameLen(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			dec, err := zstd.NewReader(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer dec.Close()
			first, err := dec.DecodeAll(b[:n], nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := header + c.head; string(first) != want {
				t.Errorf("first frame %q, want %q", first, want)
			}
			whole, err := dec.DecodeAll(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(whole) != header+c.body {
				t.Errorf("decompressed %q, want %q", whole, header+c.body)
			}
		})
	}
}

// TestMergeFrames: tasks compressed in frames merge, their frames put
// together, into the rows of the row-by-row merge of the same tasks
// plain, in a file named as a run in one process names it (plain below
// rundir.CompressAbove); a task whose file is not in frames (compressed
// whole, or plain) has the merge read every task's rows.
func TestMergeFrames(t *testing.T) {
	exps := []string{"a", "b", "c"}
	tasks := func(t *testing.T, layout map[string]string) string {
		t.Helper()
		dir := t.TempDir()
		for i, name := range exps {
			writeTask(t, dir, name, 3-i, layout[name] == "whole")
			if layout[name] == "frames" {
				if err := CompressTask(rundir.TaskDir(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
		}
		return dir
	}
	merged := func(t *testing.T, dir string) (string, []string) {
		t.Helper()
		if _, err := Merge(dir, &rundir.Dispatch{Experiments: exps, Executor: "local"}, nil); err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, f := range perRPCFiles {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				files = append(files, f)
			}
		}
		return readRPCs(t, dir), files
	}
	want, _ := merged(t, tasks(t, nil))
	if n := strings.Count(want, rundir.CalibrationExperiment("")); n != 1 {
		t.Fatalf("the plain merge has %d calibration rows, want 1:\n%s", n, want)
	}
	header, err := headerLine(rundir.RPCs())
	if err != nil {
		t.Fatal(err)
	}
	exp := func(r *rundir.RPC) string { return r.Experiment }
	cases := []struct {
		name   string
		layout map[string]string
		framed bool // the merge puts frames together
	}{
		{"every task in frames", map[string]string{"a": "frames", "b": "frames", "c": "frames"}, true},
		{"one compressed whole", map[string]string{"a": "frames", "b": "whole", "c": "frames"}, false},
		{"one plain", map[string]string{"a": "frames", "b": "frames"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tasks(t, c.layout)
			taskDirs := make([]string, len(exps))
			for i, name := range exps {
				taskDirs[i] = rundir.TaskDir(dir, name)
			}
			fr, ok, err := framedTasks(taskDirs, rundir.RPCs(), header, exp)
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.framed || (ok && len(fr) != len(exps)) {
				t.Errorf("framedTasks: %d files, ok %v; want ok %v", len(fr), ok, c.framed)
			}
			if ok {
				// The frames put together decompress to the merged rows.
				got := filepath.Join(t.TempDir(), "rpcs.csv.zst")
				if err := concatFrames(got, fr); err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				if _, err := decompress(got, &b, 1<<20); err != nil {
					t.Fatal(err)
				}
				if b.String() != want {
					t.Errorf("frames put together:\n%s\nwant\n%s", b.String(), want)
				}
			}
			got, files := merged(t, dir)
			if got != want {
				t.Errorf("merged rows\n%s\nwant\n%s", got, want)
			}
			if len(files) != 1 || files[0] != "rpcs.csv" {
				t.Errorf("merged files %v, want rpcs.csv", files)
			}
		})
	}
}
