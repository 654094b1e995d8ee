package boot

import "errors"

// Sentinel errors that callers test with errors.Is. Each is wrapped with
// context (the variable, the operation, the key or the rank) where it is
// returned.
var (
	// ErrEnv reports a missing, malformed or inconsistent launcher
	// environment variable.
	ErrEnv = errors.New("invalid commtune launcher environment")
	// ErrProtocol reports a frame that breaks the KVS protocol.
	ErrProtocol = errors.New("kvs protocol error")
	// ErrRefused reports a request the KVS refused in its current state
	// (a bad HELLO, a request before HELLO, a fence epoch mismatch, an empty
	// key).
	ErrRefused = errors.New("kvs request refused")
	// ErrLimit reports a key, value, store or waiting-request limit exceeded.
	ErrLimit = errors.New("kvs limit exceeded")
	// ErrConflict reports a PUT of a key that already holds another value.
	ErrConflict = errors.New("kvs key already holds a different value")
	// ErrRankGone reports a fence that cannot complete because a rank has
	// left the job (said BYE or lost its connection).
	ErrRankGone = errors.New("a rank has left the job")
	// ErrServerLost reports that the connection to the KVS broke.
	ErrServerLost = errors.New("connection to the launcher's kvs lost")
	// ErrRankLost is why a rank of a keep-going job sees a peer lost when
	// the launcher reports it (KV LOST): the peer ended without saying
	// goodbye.
	ErrRankLost = errors.New("the launcher saw it end without saying goodbye")
	// ErrClosed reports an operation on a KV client after Close.
	ErrClosed = errors.New("kvs client closed")
)
