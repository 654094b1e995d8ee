package auth

import (
	"bytes"
	"errors"
	"testing"
)

func TestProofVerify(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	other := []byte("fedcba9876543210fedcba9876543210")
	ch := []byte("challenge-challenge-challenge-32")
	good := Proof(secret, "tcp/connector", ch, []byte{1}, []byte{2})
	tests := []struct {
		name    string
		secret  []byte
		label   string
		ch      []byte
		binding [][]byte
		wantErr bool
	}{
		{"same everything", secret, "tcp/connector", ch, [][]byte{{1}, {2}}, false},
		{"wrong secret", other, "tcp/connector", ch, [][]byte{{1}, {2}}, true},
		{"wrong label", secret, "tcp/acceptor", ch, [][]byte{{1}, {2}}, true},
		{"wrong challenge", secret, "tcp/connector", []byte("x"), [][]byte{{1}, {2}}, true},
		{"wrong binding", secret, "tcp/connector", ch, [][]byte{{2}, {1}}, true},
		{"shifted fields", secret, "tcp/connector", ch, [][]byte{{1, 2}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.secret, tc.label, tc.ch, good, tc.binding...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Verify err = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrDenied) {
				t.Fatalf("err = %v, want ErrDenied", err)
			}
		})
	}
}

func TestSecretRoundTrip(t *testing.T) {
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSecret(EncodeSecret(s))
	if err != nil || !bytes.Equal(got, s) {
		t.Fatalf("round trip: %x, %v", got, err)
	}
	for _, bad := range []string{"", "zz", "abcd"} {
		if _, err := DecodeSecret(bad); err == nil {
			t.Errorf("DecodeSecret(%q) accepted", bad)
		}
	}
}

func TestChallengesDiffer(t *testing.T) {
	a, _ := NewChallenge()
	b, _ := NewChallenge()
	if len(a) != ChallengeSize || bytes.Equal(a, b) {
		t.Fatalf("challenges %x %x", a, b)
	}
}
