package p4rt

import (
	"errors"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
)

// errorSpace names this target in p4.v1.Error.space.
const errorSpace = "homatb-tor"

// errorf returns a gRPC status error.
func errorf(c codes.Code, format string, args ...any) error {
	return status.Error(c, fmt.Sprintf(format, args...))
}

// codeOf is the gRPC code of err (UNKNOWN for errors without one).
func codeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code()
	}
	return codes.Unknown
}

// messageOf is the status message of err.
func messageOf(err error) string {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Message()
	}
	return err.Error()
}

// batchError reports per-item results as the spec's "Error Reporting"
// section asks: nil when every item succeeded, otherwise UNKNOWN whose
// details hold exactly one p4.v1.Error per item, in request order.
func batchError(what string, errs []error) error {
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	if failed == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d of %d %s failed", failed, len(errs), what)
	st := &spb.Status{Code: int32(code.Code_UNKNOWN), Message: msg}
	for _, err := range errs {
		e := &p4v1.Error{CanonicalCode: int32(code.Code_OK)}
		if err != nil {
			e = &p4v1.Error{CanonicalCode: int32(codeOf(err)), Message: messageOf(err), Space: errorSpace}
		}
		a, aerr := anypb.New(e)
		if aerr != nil {
			return status.Errorf(codes.Internal, "pack error details: %v", aerr)
		}
		st.Details = append(st.Details, a)
	}
	return status.ErrorProto(st)
}
