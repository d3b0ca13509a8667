package runcerts

import (
	"crypto/tls"
	"path/filepath"
	"testing"
)

// TestServerCertificateNamesHosts: the agents' certificate is valid for the
// control addresses given to Generate (and loopback), not for others.
func TestServerCertificateNamesHosts(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(dir, Options{Hosts: []string{"10.99.1.2:7100", "node1.example"}}); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, AgentCertFile), filepath.Join(dir, AgentKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	leaf := pair.Leaf
	for _, ok := range []string{"10.99.1.2", "node1.example", "127.0.0.1", "localhost"} {
		if err := leaf.VerifyHostname(ok); err != nil {
			t.Errorf("certificate not valid for %s: %v", ok, err)
		}
	}
	if err := leaf.VerifyHostname("10.99.1.3"); err == nil {
		t.Error("certificate valid for an address it was not made for")
	}
	if err := Generate(t.TempDir(), Options{Hosts: []string{"no spaces/allowed"}}); err == nil {
		t.Error("a host that is neither an IP nor a name was accepted")
	}
}

// TestIsLoopback: only addresses no other machine can reach are loopback.
func TestIsLoopback(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:7100", true}, {"[::1]:7100", true}, {"localhost:7100", true},
		{":7100", false}, {"0.0.0.0:7100", false}, {"10.0.0.1:7100", false}, {"node1:7100", false}, {"127.0.0.1", false},
	}
	for _, tc := range tests {
		if got := IsLoopback(tc.addr); got != tc.want {
			t.Errorf("IsLoopback(%q) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}
