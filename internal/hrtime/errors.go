package hrtime

import "errors"

// ErrClosed is returned by Wait and Sleep on a closed Timer.
var ErrClosed = errors.New("hrtime: timer closed")
