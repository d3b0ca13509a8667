// Package tcpcc builds, loads and registers homatb's own TCP congestion
// controls, written in BPF C under bpf/ and registered with the kernel as
// struct_ops, so ordinary kernel TCP sockets can use them by name
// (TCP_CONGESTION). The kernel this project runs on lacks tcp_dctcp and
// tcp_nv; these stand in for them.
//
// The objects are compiled from bpf/*.c by `go generate` (bpf2go, clang and a
// vmlinux.h dumped from the running kernel's BTF); see docs/tcp.md.
package tcpcc

//go:generate sh -c "PATH=$PATH:/usr/sbin:/sbin; bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h"
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -no-global-types dctcp bpf/dctcp.c
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -no-global-types nv bpf/nv.c

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Prefix starts the kernel name of every congestion control this package
// registers, so leftovers can be found by name.
const Prefix = "homatb_"

// control is one congestion control this package can register.
type control struct {
	// kernelName is the name TCP_CONGESTION takes and the struct_ops map's
	// name (the C variable).
	kernelName string
	load       func() (*ebpf.CollectionSpec, error)
}

// controls maps the scenario's names to the BPF implementations.
func controls() map[string]control {
	return map[string]control{
		"dctcp": {Prefix + "dctcp", loadDctcp},
		"nv":    {Prefix + "nv", loadNv},
	}
}

// Names lists the scenario names of the BPF congestion controls, sorted.
func Names() []string {
	var ns []string
	for n := range controls() {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// IsBPF reports whether name (a scenario name such as "dctcp") is one of
// this package's congestion controls.
func IsBPF(name string) bool {
	_, ok := controls()[name]
	return ok
}

// KernelName is the name a socket passes to TCP_CONGESTION for the scenario
// name: the registered name for a BPF control, name itself otherwise.
func KernelName(name string) string {
	if c, ok := controls()[name]; ok {
		return c.kernelName
	}
	return name
}

// Registration is a congestion control registered with the kernel. It stays
// registered until Close (or until this process exits: the kernel drops a
// struct_ops link with its last file descriptor). Sockets already using it
// keep it until they close.
type Registration struct {
	// Name is the scenario name, KernelName the registered one.
	Name, KernelName string

	coll *ebpf.Collection
	lnk  link.Link
}

// Register loads the BPF congestion control called name (a scenario name,
// e.g. "dctcp") and registers it with the kernel. It fails if the kernel
// cannot (no BTF, no bpf_tcp_ca) or if the name is already registered.
func Register(name string) (*Registration, error) {
	c, ok := controls()[name]
	if !ok {
		return nil, fmt.Errorf("no BPF congestion control %q (have %s)", name, strings.Join(Names(), ", "))
	}
	spec, err := c.load()
	if err != nil {
		return nil, fmt.Errorf("loading the %s object: %w", c.kernelName, err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("%s rejected by the verifier: %+v", c.kernelName, ve)
		}
		return nil, fmt.Errorf("loading %s into the kernel: %w", c.kernelName, err)
	}
	m := coll.Maps[c.kernelName]
	if m == nil {
		coll.Close()
		return nil, fmt.Errorf("the %s object has no struct_ops map %q", c.kernelName, c.kernelName)
	}
	l, err := link.AttachStructOps(link.StructOpsOptions{Map: m})
	if err != nil {
		coll.Close()
		return nil, fmt.Errorf("registering %s: %w", c.kernelName, err)
	}
	return &Registration{Name: name, KernelName: c.kernelName, coll: coll, lnk: l}, nil
}

// Close unregisters the congestion control and frees its programs.
func (r *Registration) Close() error {
	err := r.lnk.Close()
	r.coll.Close()
	if err != nil {
		return fmt.Errorf("unregistering %s: %w", r.KernelName, err)
	}
	return nil
}

// Available lists the congestion controls the kernel offers now.
func Available() ([]string, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return nil, fmt.Errorf("reading available congestion controls: %w", err)
	}
	return strings.Fields(string(b)), nil
}
