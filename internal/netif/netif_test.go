package netif

import (
	"errors"
	"net/netip"
	"testing"
)

func fake(t *testing.T, ifs ...Iface) {
	t.Helper()
	old := list
	list = func() ([]Iface, error) { return ifs, nil }
	t.Cleanup(func() { list = old })
}

func ifc(name, prefix string) Iface { return Iface{Name: name, Prefix: netip.MustParsePrefix(prefix)} }

func TestByName(t *testing.T) {
	fake(t, ifc("lo", "127.0.0.1/8"), ifc("eth1", "fe80::1/64"), ifc("eth1", "2001:db8::5/64"),
		ifc("eth1", "10.0.1.5/24"), ifc("ib0", "2001:db8:1::7/64"))
	for _, tc := range []struct {
		name, want, identity string
	}{
		{"eth1", "10.0.1.5/24", "eth1/ipv4"}, // IPv4 first, wherever it is listed
		{"ib0", "2001:db8:1::7/64", "ib0/ipv6"},
		{"lo", "127.0.0.1/8", "lo/ipv4"},
		{"eth9", "", ""},
	} {
		got, err := ByName(tc.name)
		if tc.want == "" {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: err %v, want ErrNotFound", tc.name, err)
			}
			continue
		}
		if err != nil || got.Prefix.String() != tc.want || got.Identity() != tc.identity {
			t.Errorf("%s: %v %s %v, want %s %s", tc.name, got.Prefix, got.Identity(), err, tc.want, tc.identity)
		}
	}
}

func TestByAddrAndCandidates(t *testing.T) {
	fake(t, ifc("lo", "127.0.0.1/8"), ifc("veth9", "10.88.2.1/24"), ifc("eth0", "192.168.1.4/24"),
		ifc("eth0", "fe80::2/64"), ifc("eth0", "2001:db8::4/64"), ifc("veth9", "10.88.2.9/24"))
	if it, err := ByAddr(netip.MustParseAddr("10.88.2.1")); err != nil || it.Name != "veth9" {
		t.Fatalf("ByAddr: %v %v", it, err)
	}
	if it, err := ByAddr(netip.MustParseAddr("0.0.0.0")); err != nil || it.Identity() != "any/ipv4" {
		t.Fatalf("ByAddr(any): %v %v", it, err)
	}
	if it, err := ByAddr(netip.MustParseAddr("127.0.0.2")); err != nil || it.Identity() != "lo/ipv4" {
		t.Fatalf("ByAddr(127.0.0.2): %v %v, want lo's network", it, err)
	}
	if _, err := ByAddr(netip.MustParseAddr("10.9.9.9")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ByAddr(unknown): %v", err)
	}
	got, err := Candidates()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range got {
		ids = append(ids, c.Identity()+"="+c.Prefix.String())
	}
	want := []string{"eth0/ipv4=192.168.1.4/24", "eth0/ipv6=2001:db8::4/64", "veth9/ipv4=10.88.2.1/24"}
	if len(ids) != len(want) {
		t.Fatalf("Candidates: %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("Candidates: %v, want %v", ids, want)
		}
	}
}

func TestTowardLoopback(t *testing.T) {
	// The real system: every Linux machine routes 127.0.0.1 through lo.
	it, err := Toward("127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	if !it.Prefix.Addr().IsLoopback() {
		t.Fatalf("Toward(127.0.0.1) = %v, want a loopback address", it)
	}
}
