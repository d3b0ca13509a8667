package slurm

import (
	"slices"
	"testing"
)

func TestParseTaskRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "3", want: []int{3}},
		{in: "2-5", want: []int{2, 3, 4, 5}},
		{in: "1,3-4", want: []int{1, 3, 4}},
		{in: "0-2%1", want: []int{0, 1, 2}},
		{in: "x", bad: true},
		{in: "5-2", bad: true},
	} {
		got, err := parseTaskRange(tc.in)
		if (err != nil) != tc.bad || !slices.Equal(got, tc.want) {
			t.Errorf("parseTaskRange(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseScontrol(t *testing.T) {
	out := []byte("JobId=4 ArrayJobId=4 ArrayTaskId=2-3 JobName=x JobState=PENDING Reason=Resources ExitCode=0:0\n" +
		"JobId=6 ArrayJobId=4 ArrayTaskId=1 JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0\n" +
		"JobId=5 ArrayJobId=4 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0\n")
	st, err := parseScontrol(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]TaskState{
		0: {State: "COMPLETED", ExitCode: "0:0", Reason: "None"},
		1: {State: "FAILED", ExitCode: "1:0", Reason: "NonZeroExitCode"},
		2: {State: "PENDING", ExitCode: "0:0", Reason: "Resources"},
		3: {State: "PENDING", ExitCode: "0:0", Reason: "Resources"},
	}
	if len(st) != len(want) {
		t.Fatalf("got %v", st)
	}
	for i, w := range want {
		if st[i] != w {
			t.Errorf("task %d: %+v, want %+v", i, st[i], w)
		}
	}
	if st[0].Ended() != true || st[2].Ended() || !st[0].OK() || st[1].OK() {
		t.Errorf("Ended/OK wrong: %+v", st)
	}
	if _, err := parseScontrol([]byte("JobId=1 ArrayTaskId=a-b JobState=PENDING")); err == nil {
		t.Error("a bad task range was accepted")
	}
}

func TestParseSacct(t *testing.T) {
	st := parseSacct("7", []byte("7_0|COMPLETED|0:0\n7_1|CANCELLED by 0|0:15\n7_[2-3]|PENDING|0:0\n8_0|FAILED|1:0\n"))
	if st[0].State != "COMPLETED" || st[1].State != "CANCELLED" || st[1].ExitCode != "0:15" || st[3].State != "PENDING" || len(st) != 4 {
		t.Errorf("got %+v", st)
	}
}

func TestBatchScriptQuotes(t *testing.T) {
	got := batchScript([]string{"/bin/homatb", "run-experiment", "/runs/it's here", "a b"})
	want := "#!/bin/sh\nexec '/bin/homatb' 'run-experiment' '/runs/it'\\''s here' 'a b'\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestInferCancelled(t *testing.T) {
	st := map[int]TaskState{0: {State: "COMPLETED"}, 2: {State: "RUNNING"}}
	inferCancelled(st, 4)
	if st[1].State != "CANCELLED" || st[3].State != "CANCELLED" || st[0].State != "COMPLETED" || st[2].State != "RUNNING" {
		t.Errorf("got %+v", st)
	}
	none := map[int]TaskState{}
	inferCancelled(none, 3)
	if len(none) != 0 {
		t.Errorf("a job the controller forgot got states %+v", none)
	}
}
