// Package auth proves that both ends of a connection belong to the same job:
// each side sends a random challenge and answers the other's with an
// HMAC-SHA256 keyed by the job secret. The secret itself never crosses the
// wire, and a recorded answer is useless against a fresh challenge.
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

const (
	// ChallengeSize is the length of a challenge in bytes.
	ChallengeSize = 32
	// ProofSize is the length of a proof (an HMAC-SHA256) in bytes.
	ProofSize = sha256.Size
	// SecretSize is the length of secrets made by NewSecret.
	SecretSize = 32
)

// ErrDenied is returned when a peer's proof does not match.
var ErrDenied = errors.New("authentication failed: peer does not hold the job secret")

// NewSecret returns a fresh random job secret.
func NewSecret() ([]byte, error) { return random(SecretSize) }

// NewChallenge returns a fresh random challenge.
func NewChallenge() ([]byte, error) { return random(ChallengeSize) }

func random(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("auth: reading random bytes: %w", err)
	}
	return b, nil
}

// Proof answers challenge with the job secret. label names the protocol and
// the direction ("tcp/connector"), and binding adds whatever both ends must
// agree on (ranks, rail index) so that a proof cannot be replayed elsewhere.
func Proof(secret []byte, label string, challenge []byte, binding ...[]byte) []byte {
	m := hmac.New(sha256.New, secret)
	writeField(m, []byte(label))
	writeField(m, challenge)
	for _, b := range binding {
		writeField(m, b)
	}
	return m.Sum(nil)
}

// writeField writes a length-prefixed field so that fields cannot be shifted
// into one another.
func writeField(m interface{ Write([]byte) (int, error) }, b []byte) {
	n := len(b)
	m.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	m.Write(b)
}

// Verify checks proof in constant time; it returns ErrDenied on mismatch.
func Verify(secret []byte, label string, challenge, proof []byte, binding ...[]byte) error {
	if !hmac.Equal(Proof(secret, label, challenge, binding...), proof) {
		return ErrDenied
	}
	return nil
}

// EncodeSecret renders a secret for an environment variable.
func EncodeSecret(secret []byte) string { return hex.EncodeToString(secret) }

// DecodeSecret parses a secret rendered by EncodeSecret; it must hold at
// least 16 bytes.
func DecodeSecret(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("job secret is not hexadecimal: %w", err)
	}
	if len(b) < 16 {
		return nil, fmt.Errorf("job secret is %d bytes, want at least 16", len(b))
	}
	return b, nil
}
