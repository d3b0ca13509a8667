package tcpcc

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Leftover is a congestion control of this package still registered with
// the kernel: by a run that is still going, or by a process that hangs.
type Leftover struct {
	// KernelName is the registered name (Prefix + scenario name).
	KernelName string
	// LinkID identifies the struct_ops link that holds the registration.
	LinkID link.ID
}

func (l Leftover) String() string {
	return fmt.Sprintf("congestion control %s (bpf link %d)", l.KernelName, l.LinkID)
}

// FindRegistered lists the struct_ops links whose congestion control's
// name starts with Prefix.
func FindRegistered() ([]Leftover, error) {
	var found []Leftover
	it := new(link.Iterator)
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil || info.Type != link.StructOpsType {
			continue
		}
		fdl, ok := it.Link.(interface{ FD() int })
		if !ok {
			continue
		}
		mapID, err := structOpsMapID(fdl.FD())
		if err != nil {
			return found, fmt.Errorf("bpf link %d: %w", it.ID, err)
		}
		m, err := ebpf.NewMapFromID(ebpf.MapID(mapID))
		if err != nil {
			continue // gone meanwhile
		}
		minfo, err := m.Info()
		m.Close()
		if err != nil {
			continue
		}
		if strings.HasPrefix(minfo.Name, Prefix) {
			found = append(found, Leftover{KernelName: minfo.Name, LinkID: it.ID})
		}
	}
	if err := it.Err(); err != nil {
		return found, fmt.Errorf("listing bpf links: %w", err)
	}
	return found, nil
}

// Unregister detaches the link, which unregisters the congestion control
// even while another process still holds the link open.
func (l Leftover) Unregister() error {
	lk, err := link.NewFromID(l.LinkID)
	if err != nil {
		return fmt.Errorf("opening %s: %w", l, err)
	}
	defer lk.Close()
	raw, ok := lk.(interface{ Detach() error })
	if !ok {
		return fmt.Errorf("%s: link cannot be detached", l)
	}
	if err := raw.Detach(); err != nil {
		return fmt.Errorf("detaching %s: %w", l, err)
	}
	return nil
}

// structOpsMapID reads the struct_ops map a link holds: cilium/ebpf's
// link.Info leaves out the struct_ops part of bpf_link_info.
func structOpsMapID(fd int) (uint32, error) {
	// The head of struct bpf_link_info: type, id, prog_id, then the
	// union (8-byte aligned) whose struct_ops member starts with map_id.
	var info struct {
		Type, ID, ProgID, _ uint32
		MapID, _            uint32
	}
	// A typed pointer (the kernel's __u64 info) keeps info alive and
	// tracked by the garbage collector until the call returns.
	attr := struct {
		FD, Len uint32
		Info    unsafe.Pointer
	}{uint32(fd), uint32(unsafe.Sizeof(info)), unsafe.Pointer(&info)}
	_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_GET_INFO_BY_FD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return 0, fmt.Errorf("BPF_OBJ_GET_INFO_BY_FD: %w", errno)
	}
	return info.MapID, nil
}
