package agent

import (
	"fmt"
	"log/slog"

	"github.com/homatb/homatb/hostagent/agentpb"
)

// newHomaTransport builds the Homa transport (hostagent/homa).
func newHomaTransport(_ *agentpb.ConfigureRequest, _ *slog.Logger) (Transport, error) {
	return nil, fmt.Errorf("homa: %w: hostagent/homa is not integrated yet", ErrUnsupported)
}
