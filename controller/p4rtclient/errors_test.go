package p4rtclient

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

func TestDecodeWriteError(t *testing.T) {
	s := torSchema(t)
	var entries []Entry
	for i := range 3 {
		ip := netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)})
		entries = append(entries, Entry{Table: "arp_proxy", Match: []Match{Exact("hdr.arp.tpa", IPv4(ip))},
			Action: "arp_reply", Params: map[string]Value{"mac": Uint(uint64(i + 1))}})
	}
	updates, err := s.Updates(p4v1.Update_INSERT, entries...)
	if err != nil {
		t.Fatal(err)
	}
	perUpdate := []*p4v1.Error{
		{CanonicalCode: int32(codes.OK)},
		{CanonicalCode: int32(codes.AlreadyExists), Message: "Match entry exists"},
		{CanonicalCode: int32(codes.OK)},
	}
	details := make([]protoadapt.MessageV1, len(perUpdate))
	for i, e := range perUpdate {
		details[i] = protoadapt.MessageV1Of(e)
	}
	st, err := status.New(codes.Unknown, "one update failed").WithDetails(details...)
	if err != nil {
		t.Fatal(err)
	}

	got, ok := decodeWriteError(st.Err(), updates, 1000, s.Describe)
	var we *WriteError
	if !errors.As(got, &we) {
		t.Fatalf("decodeWriteError = %v, want a *WriteError", got)
	}
	if len(we.Failed) != 1 || we.Updates != 3 {
		t.Fatalf("WriteError = %+v, want 1 of 3 failed", we)
	}
	f := we.Failed[0]
	if f.Index != 1001 || f.Code != codes.AlreadyExists || f.Type != p4v1.Update_INSERT {
		t.Errorf("failure = %+v, want index 1001 ALREADY_EXISTS INSERT", f)
	}
	for _, want := range []string{"TorIngress.arp_proxy", "hdr.arp.tpa=0x0a000002", "AlreadyExists", "Match entry exists", "1 of 3"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("error %q does not mention %q", got, want)
		}
	}
	if fmt.Sprint(ok) != "[true false true]" {
		t.Errorf("applied = %v, want [true false true]", ok)
	}
}

func TestDecodeWriteErrorKeepsRPCWideStatus(t *testing.T) {
	rpcErr := status.Error(codes.PermissionDenied, "Not primary")
	got, ok := decodeWriteError(rpcErr, make([]*p4v1.Update, 2), 0, torSchema(t).Describe)
	if ok != nil {
		t.Errorf("applied = %v for an RPC-wide error, want nil", ok)
	}
	if status.Code(got) != codes.PermissionDenied {
		t.Fatalf("status.Code(%v) = %v, want PermissionDenied", got, status.Code(got))
	}
	var we *WriteError
	if errors.As(got, &we) {
		t.Fatal("an RPC-wide error decoded as per-update failures")
	}
}
