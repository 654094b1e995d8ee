package job

import "testing"

func TestListenAddrs(t *testing.T) {
	got, err := listenAddrs([]string{"127.0.0.1", "10.0.0.2:7000", "::1"})
	if err != nil || got[0] != "127.0.0.1:0" || got[1] != "10.0.0.2:7000" || got[2] != "[::1]:0" {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := listenAddrs([]string{"a:b:c"}); err == nil {
		t.Fatal("bad rail accepted")
	}
	// An interface name listens on its address: every Linux machine has lo.
	if got, err := listenAddrs([]string{"lo"}); err != nil || got[0] != "127.0.0.1:0" {
		t.Fatalf("lo: %v %v", got, err)
	}
}
