package nsenter

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestDo(t *testing.T) {
	want := errors.New("from fn")
	for _, tc := range []struct {
		name, path string
		fnErr      error
		wantIn     string // in the error; "" for fn's own
	}{
		{"own namespace, fn's error", "/proc/self/ns/net", want, ""},
		{"no such namespace", "/nonexistent/ns", nil, "namespace /nonexistent/ns"},
		{"not a namespace", "/proc/self/status", nil, "enter namespace /proc/self/status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantIn == "" && os.Geteuid() != 0 {
				t.Skip("needs root: entering a namespace, even one's own, needs CAP_SYS_ADMIN")
			}
			ran := false
			err := Do(tc.path, func() error { ran = true; return tc.fnErr })
			if tc.wantIn == "" {
				if !ran || !errors.Is(err, want) {
					t.Errorf("ran %v, err %v: want fn run and its error", ran, err)
				}
				return
			}
			if ran || err == nil || !strings.Contains(err.Error(), tc.wantIn) {
				t.Errorf("ran %v, err %v: want fn not run and an error naming %q", ran, err, tc.wantIn)
			}
		})
	}
}
