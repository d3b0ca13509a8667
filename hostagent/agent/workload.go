package agent

import "github.com/homatb/homatb/driver"

// ConfigError is a bad setting in a Configure request; the API maps it to
// InvalidArgument.
type ConfigError = driver.ConfigError

func invalid(field string, value any, format string, args ...any) error {
	return driver.Invalid(field, value, format, args...)
}
