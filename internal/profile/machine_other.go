//go:build !linux

package profile

func cpuModel() string { return "unknown" }

func kernelRelease() string { return "unknown" }
