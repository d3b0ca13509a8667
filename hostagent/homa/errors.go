package homa

import "errors"

// Errors a Call or Reply can return, wrapped with the RPC's context. Use
// errors.Is to test them and Reason to turn one into a record field.
var (
	// ErrTimeout: the peer was silent for homaconf.Config.TimeoutTicks.
	ErrTimeout = errors.New("homa: rpc timed out")
	// ErrPeerUnknown: the peer repeatedly answered RPC_UNKNOWN before any
	// response byte arrived (no server on that port, or it keeps forgetting).
	ErrPeerUnknown = errors.New("homa: peer does not know the rpc")
	// ErrAborted: the caller's context ended the RPC.
	ErrAborted = errors.New("homa: rpc aborted")
	// ErrClosed: the Endpoint or Server was closed.
	ErrClosed = errors.New("homa: endpoint closed")
	// ErrTooLarge: the message exceeds homaconf.Config.MaxMessageBytes.
	ErrTooLarge = errors.New("homa: message too large")
)

// Reason maps an error from this package to a short word for records:
// "timeout", "peer_unknown", "aborted", "closed", "too_large" or "error".
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrPeerUnknown):
		return "peer_unknown"
	case errors.Is(err, ErrAborted):
		return "aborted"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	}
	return "error"
}
