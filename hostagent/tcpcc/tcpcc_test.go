package tcpcc

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// needRoot skips tests that load BPF programs without the privilege to.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loading BPF congestion controls needs root")
	}
}

// register registers name for the test, skipping it while a homatb run
// holds the name (the kernel allows one registration per name).
func register(t *testing.T, name string) *Registration {
	t.Helper()
	r, err := Register(name)
	if errors.Is(err, os.ErrExist) {
		t.Skipf("%s is registered by someone else (a homatb run?)", KernelName(name))
	}
	if err != nil {
		t.Fatalf("Register(%q): %v", name, err)
	}
	return r
}

func TestRegisterAndClose(t *testing.T) {
	needRoot(t)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			r := register(t, name)
			avail, err := Available()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(avail, KernelName(name)) {
				t.Errorf("after Register: available %v, want %s in it", avail, KernelName(name))
			}
			if err := r.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if avail, _ = Available(); slices.Contains(avail, KernelName(name)) {
				t.Errorf("after Close: %s still available (%v)", KernelName(name), avail)
			}
		})
	}
}

func TestNames(t *testing.T) {
	tests := []struct{ name, kernel string }{
		{"dctcp", "homatb_dctcp"},
		{"nv", "homatb_nv"},
		{"cubic", "cubic"},
		{"reno", "reno"},
	}
	for _, tt := range tests {
		if got := KernelName(tt.name); got != tt.kernel {
			t.Errorf("KernelName(%q) = %q, want %q", tt.name, got, tt.kernel)
		}
		if got, want := IsBPF(tt.name), tt.kernel != tt.name; got != want {
			t.Errorf("IsBPF(%q) = %v, want %v", tt.name, got, want)
		}
	}
	if _, err := Register("nosuch"); err == nil {
		t.Error("Register(nosuch): no error")
	}
}

func TestFindAndUnregisterLeftover(t *testing.T) {
	needRoot(t)
	r := register(t, "dctcp")
	defer r.Close()
	found, err := FindRegistered()
	if err != nil {
		t.Fatal(err)
	}
	var mine *Leftover
	for i := range found {
		if found[i].KernelName == "homatb_dctcp" {
			mine = &found[i]
		}
	}
	if mine == nil {
		t.Fatalf("FindRegistered = %v, want homatb_dctcp in it", found)
	}
	if err := mine.Unregister(); err != nil {
		t.Fatal(err)
	}
	if avail, _ := Available(); slices.Contains(avail, "homatb_dctcp") {
		t.Errorf("after Unregister: still available (%v)", avail)
	}
	found, _ = FindRegistered()
	for _, l := range found {
		if l.KernelName == "homatb_dctcp" {
			t.Errorf("after Unregister: FindRegistered = %v", found)
		}
	}
}
