//go:build !amd64 && !arm64

package observe

func ticks() int64 { return Now() }

func countersAgree() bool { return false }
