// Package setting words the errors about commtune's settings, its
// environment variables and the Config fields they map onto, one way
// everywhere: the setting as the user wrote it, then what it accepts.
//
//	COMMTUNE_SHM_RING="3000": want a power of two from 4K to 1G
//	COMMTUNE_SHM_CHUNK="1M" with COMMTUNE_SHM_RING="64K": want a chunk of at most a quarter of the ring (16K)
//
// A message naming the setting and its rule points the user at the value
// they got wrong, not at another one it happened to upset; a message
// naming two says the conflict is between them, each being fine alone.
package setting

import "fmt"

// Given is a setting as the user gave it: an environment variable and its
// text, or a Config field and its value.
type Given struct {
	Name  string // COMMTUNE_SHM_RING, Config.Shm.Ring …
	Value any    // nil for a value never to be shown (a secret)
}

// Env is the variable name set to text.
func Env(name, text string) Given { return Given{Name: name, Value: text} }

// Field is the Config field name (Config.Shm.Ring) holding v.
func Field(name string, v any) Given { return Given{Name: name, Value: v} }

// Secret is the variable name, whose value no message may show.
func Secret(name string) Given { return Given{Name: name} }

// String is NAME="text" for a string (quoted, so blanks and empty values
// show), NAME=value otherwise, and NAME alone for a secret.
func (g Given) String() string {
	switch v := g.Value.(type) {
	case nil:
		return g.Name
	case string:
		return fmt.Sprintf("%s=%q", g.Name, v)
	default:
		return fmt.Sprintf("%s=%v", g.Name, v)
	}
}

// Bad is the error for g holding a value it does not accept; want,
// formatted with args (%w wraps), says what it accepts.
func Bad(g Given, want string, args ...any) error {
	return fmt.Errorf("%v: want "+want, append([]any{g}, args...)...)
}

// Conflict is the error for a and b, each accepted alone but not
// together; want, formatted with args, says what they must satisfy.
func Conflict(a, b Given, want string, args ...any) error {
	return fmt.Errorf("%v with %v: want "+want, append([]any{a, b}, args...)...)
}
