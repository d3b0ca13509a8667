package rundir

import "strings"

// Strings interns the strings of rows kept in memory: a row read from a
// CSV file shares its line's one allocation, so keeping any of its strings
// keeps the whole line; a row whose strings are interned keeps one copy of
// each distinct host, address or name instead.
type Strings map[string]string

// Intern returns the set's copy of s, adding one when s is new.
func (t Strings) Intern(s string) string {
	if v, ok := t[s]; ok {
		return v
	}
	s = strings.Clone(s)
	t[s] = s
	return s
}
