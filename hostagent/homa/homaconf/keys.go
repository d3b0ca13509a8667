package homaconf

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The keys are the names a scenario's homa block uses for Config's fields:
// each field that has one carries it in a `homa:"key"` tag, and that tag is
// the whole declaration (Set, Settings and Keys read it). Fields without a
// tag are set by the program: LinkBps and MTU from the link, UnloadedRTT
// from calibration, TraceGrants by programs using the package.
//
// A time.Duration field's key ends in "_us": its value is whole
// microseconds. Tag options: "off" lets the value "off" mean a negative
// duration (PacerSpin: never poll); "not" stores a boolean inverted
// (fifo_grants: false sets DisableFIFOGrants).

// Error is a value of Config that is out of range or of the wrong type,
// with the key that set it ("mtu" and "link_bps" for the untagged MTU and
// LinkBps), so that a scenario can name the line.
type Error struct {
	Key string
	Msg string
}

func (e *Error) Error() string { return "homa config: " + e.Key + ": " + e.Msg }

func keyErr(key, format string, args ...any) error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// keyField is one tagged field of Config.
type keyField struct {
	key   string
	index int
	off   bool // "off": the value "off" means a negative duration
	not   bool // "not": a boolean stored inverted
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	// keyFields is derived once from Config's tags; it is never written
	// after that.
	keyFields = sync.OnceValue(func() []keyField {
		t := reflect.TypeOf(Config{})
		var out []keyField
		for i := range t.NumField() {
			tag, ok := t.Field(i).Tag.Lookup("homa")
			if !ok {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			out = append(out, keyField{key: name, index: i,
				off: slices.Contains(strings.Split(opts, ","), "off"), not: slices.Contains(strings.Split(opts, ","), "not")})
		}
		return out
	})
)

// Keys lists the keys of Config's settings in field order.
func Keys() []string {
	fs := keyFields()
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.key
	}
	return out
}

func lookup(key string) (keyField, bool) {
	i := slices.IndexFunc(keyFields(), func(f keyField) bool { return f.key == key })
	if i < 0 {
		return keyField{}, false
	}
	return keyFields()[i], true
}

// Set sets the field of key from a value as a YAML or JSON decoder returns
// it into an `any`: a bool, an integer (int, int64, uint64, or a float64
// with no fraction), a string, or a list of integers for unsched_cutoffs.
// A string holding a number or a boolean is accepted too (scenarios
// written before the keys had fields set them as strings under extra).
// Limits are WithDefaults's, not Set's: Set refuses only values the field
// cannot hold.
func (c *Config) Set(key string, value any) error {
	f, ok := lookup(key)
	if !ok {
		return keyErr(key, "unknown key; expected one of %s", strings.Join(Keys(), ", "))
	}
	dst := reflect.ValueOf(c).Elem().Field(f.index)
	if err := setValue(dst, f, value); err != nil {
		return &Error{Key: key, Msg: err.Error()}
	}
	return nil
}

func setValue(dst reflect.Value, f keyField, value any) error {
	switch {
	case dst.Type() == durationType:
		if s, ok := value.(string); ok && f.off && s == "off" {
			dst.SetInt(-1)
			return nil
		}
		if v, ok := value.(float64); ok && v != math.Trunc(v) && math.Abs(v) < 1e9 {
			// A fraction of a microsecond, to the nanosecond: the
			// simulator's clock has no wake-up lag to cover.
			dst.SetInt(int64(math.Round(v * 1e3)))
			return nil
		}
		us, err := toInt(value, math.MinInt64/int64(time.Microsecond), math.MaxInt64/int64(time.Microsecond))
		if err != nil {
			return err
		}
		dst.SetInt(us * int64(time.Microsecond))
		return nil
	case dst.Kind() == reflect.Bool:
		b, err := toBool(value)
		if err != nil {
			return err
		}
		dst.SetBool(b != f.not)
		return nil
	case dst.Kind() == reflect.String:
		s, ok := value.(string)
		if !ok {
			return fmt.Errorf("expected a string, got %v", value)
		}
		dst.SetString(s)
		return nil
	case dst.CanInt():
		lo, hi := intRange(dst.Type())
		n, err := toInt(value, lo, hi)
		if err != nil {
			return err
		}
		dst.SetInt(n)
		return nil
	case dst.CanUint():
		n, err := toInt(value, 0, int64(min(uint64(math.MaxInt64), math.MaxUint64>>(64-dst.Type().Bits()))))
		if err != nil {
			return err
		}
		dst.SetUint(uint64(n))
		return nil
	case dst.Kind() == reflect.Slice && dst.Type().Elem().Kind() == reflect.Uint32:
		list, ok := value.([]any)
		if u, isU32 := value.([]uint32); isU32 {
			list, ok = make([]any, len(u)), true
			for i, n := range u {
				list[i] = uint64(n)
			}
		}
		if !ok {
			return fmt.Errorf("expected a list of integers, got %v", value)
		}
		out := reflect.MakeSlice(dst.Type(), len(list), len(list))
		for i, v := range list {
			n, err := toInt(v, 0, math.MaxUint32)
			if err != nil {
				return fmt.Errorf("entry %d: %w", i, err)
			}
			out.Index(i).SetUint(uint64(n))
		}
		dst.Set(out)
		return nil
	}
	return fmt.Errorf("field of type %s has no decoding", dst.Type())
}

func intRange(t reflect.Type) (int64, int64) {
	bits := t.Bits()
	return -1 << (bits - 1), 1<<(bits-1) - 1
}

// toInt converts an integer value in [lo, hi].
func toInt(value any, lo, hi int64) (int64, error) {
	var n int64
	switch v := value.(type) {
	case int:
		n = int64(v)
	case int64:
		n = v
	case uint64:
		if v > math.MaxInt64 {
			return 0, fmt.Errorf("expected an integer from %d to %d, got %d", lo, hi, v)
		}
		n = int64(v)
	case float64:
		if v != math.Trunc(v) {
			return 0, fmt.Errorf("expected an integer, got %v", v)
		}
		if v < math.MinInt64 || v > math.MaxInt64 {
			return 0, fmt.Errorf("expected an integer from %d to %d, got %v", lo, hi, v)
		}
		n = int64(v)
	case string:
		p, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("expected an integer, got %q", v)
		}
		n = p
	default:
		return 0, fmt.Errorf("expected an integer, got %v", value)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("expected an integer from %d to %d, got %d", lo, hi, n)
	}
	return n, nil
}

// toBool converts true or false; strings also as on or off (the old
// extra key fifo_grants) and as strconv.ParseBool reads them.
func toBool(value any) (bool, error) {
	switch v := value.(type) {
	case bool:
		return v, nil
	case string:
		switch v {
		case "on":
			return true, nil
		case "off":
			return false, nil
		}
		if b, err := strconv.ParseBool(v); err == nil {
			return b, nil
		}
	}
	return false, fmt.Errorf("expected true or false, got %v", value)
}

// Setting is one key of Config and its value in the form Set accepts:
// durations in microseconds, "off" for a negative duration of an "off"
// key, and booleans of "not" keys as the key reads.
type Setting struct {
	Key   string
	Value any
}

// Settings lists every key of c with its value, in field order; Set of
// each gives c's keyed fields back.
func (c Config) Settings() []Setting {
	v := reflect.ValueOf(c)
	var out []Setting
	for _, f := range keyFields() {
		fv := v.Field(f.index)
		var val any
		switch {
		case fv.Type() == durationType:
			d := time.Duration(fv.Int())
			if d < 0 && f.off {
				val = "off"
			} else if d%time.Microsecond != 0 {
				val = float64(d) / float64(time.Microsecond)
			} else {
				val = int64(d / time.Microsecond)
			}
		case fv.Kind() == reflect.Bool:
			val = fv.Bool() != f.not
		case fv.Kind() == reflect.String:
			val = fv.String()
		case fv.CanInt():
			val = fv.Int()
		case fv.CanUint():
			val = fv.Uint()
		default:
			val = fv.Interface()
		}
		out = append(out, Setting{Key: f.key, Value: val})
	}
	return out
}
