// Package kind names the attacks of package adversary. It imports
// nothing, so scenario validation checks an adversary's kind without
// linking the engine.
package kind

// Kind is an attack.
type Kind string

// The kinds (package adversary says what each sends).
const (
	ForgedGrants  Kind = "forged_grants"
	ForgedResend  Kind = "forged_resend"
	UnschedFlood  Kind = "unsched_flood"
	PriorityAbuse Kind = "priority_abuse"
	Malformed     Kind = "malformed"
	// None sends nothing: in a scenario, the attack-free run of a sweep
	// over kinds. Not in All: there is nothing to run.
	None Kind = "none"
)

// All lists the kinds.
func All() []Kind { return []Kind{ForgedGrants, ForgedResend, UnschedFlood, PriorityAbuse, Malformed} }

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool {
	for _, x := range All() {
		if k == x {
			return true
		}
	}
	return false
}
