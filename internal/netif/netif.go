// Package netif finds the network interfaces that can carry TCP rails: by
// name, by the address they hold, by the route to a server, and the whole
// set a node offers, each with the identity a rail keeps across runs
// (interface name and address family, never a port).
package netif

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// Iface is one usable address of one interface.
type Iface struct {
	Name   string       // the interface's name: "eth1", "ib0", "lo"
	Prefix netip.Prefix // its address and network: 10.88.1.1/24
}

// Identity is how a rail on this interface is known across runs and in a
// tuning profile: "eth1/ipv4".
func (i Iface) Identity() string { return Identity(i.Name, i.Prefix.Addr()) }

// Identity names a rail by interface and address family.
func Identity(name string, a netip.Addr) string {
	if a.Is4() || a.Is4In6() {
		return name + "/ipv4"
	}
	return name + "/ipv6"
}

// ErrNotFound is wrapped when no interface matches.
var ErrNotFound = errors.New("no such interface")

// list is what the package reads from the system; tests replace it.
var list = systemIfaces

func systemIfaces() ([]Iface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("netif: listing interfaces: %w", err)
	}
	var out []Iface
	for _, it := range ifs {
		if it.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := it.Addrs()
		if err != nil {
			continue // gone meanwhile
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			ip = ip.Unmap()
			ones, _ := ipn.Mask.Size()
			out = append(out, Iface{Name: it.Name, Prefix: netip.PrefixFrom(ip, ones)})
		}
	}
	return out, nil
}

// usable reports whether a rail may listen on a: not a link-local address
// (it needs a zone and never crosses a router) nor unspecified.
func usable(a netip.Addr) bool {
	return a.IsValid() && !a.IsUnspecified() && !a.IsLinkLocalUnicast() && !a.IsMulticast()
}

// ByName returns the address a rail on interface name listens on: its
// first IPv4 address, else its first IPv6 one.
func ByName(name string) (Iface, error) {
	ifs, err := list()
	if err != nil {
		return Iface{}, err
	}
	var v6 *Iface
	for i := range ifs {
		if ifs[i].Name != name || !usable(ifs[i].Prefix.Addr()) {
			continue
		}
		if ifs[i].Prefix.Addr().Is4() {
			return ifs[i], nil
		}
		if v6 == nil {
			v6 = &ifs[i]
		}
	}
	if v6 != nil {
		return *v6, nil
	}
	return Iface{}, fmt.Errorf("netif: interface %q: %w (or it is down, or has no address)", name, ErrNotFound)
}

// ByAddr returns the interface that holds address a, else the one whose
// network holds it (the longest prefix). An unspecified address
// ("0.0.0.0") is "any", which no interface holds.
func ByAddr(a netip.Addr) (Iface, error) {
	a = a.Unmap()
	if a.IsUnspecified() {
		return Iface{Name: "any", Prefix: netip.PrefixFrom(a, 0)}, nil
	}
	ifs, err := list()
	if err != nil {
		return Iface{}, err
	}
	best := -1
	for i, it := range ifs {
		if it.Prefix.Addr() == a {
			return it, nil
		}
		// An address of a network an interface serves (127.0.0.2 on lo).
		if it.Prefix.Contains(a) && (best < 0 || it.Prefix.Bits() > ifs[best].Prefix.Bits()) {
			best = i
		}
	}
	if best >= 0 {
		return ifs[best], nil
	}
	return Iface{}, fmt.Errorf("netif: address %s: %w", a, ErrNotFound)
}

// Toward returns the interface this host would use to reach host:port
// (the source address the kernel picks; nothing is sent).
func Toward(hostport string) (Iface, error) {
	c, err := net.Dial("udp", hostport)
	if err != nil {
		return Iface{}, fmt.Errorf("netif: route to %s: %w", hostport, err)
	}
	defer c.Close()
	ap, err := netip.ParseAddrPort(c.LocalAddr().String())
	if err != nil {
		return Iface{}, fmt.Errorf("netif: route to %s: %w", hostport, err)
	}
	return ByAddr(ap.Addr())
}

// Candidates returns the interfaces that can carry rails to other nodes:
// up, with an address that is neither loopback nor link-local, sorted by
// name (IPv4 before IPv6 within one interface), one address per
// interface and family.
func Candidates() ([]Iface, error) {
	ifs, err := list()
	if err != nil {
		return nil, err
	}
	var out []Iface
	for _, it := range ifs {
		a := it.Prefix.Addr()
		if !usable(a) || a.IsLoopback() {
			continue
		}
		if slices.ContainsFunc(out, func(o Iface) bool { return o.Identity() == it.Identity() }) {
			continue
		}
		out = append(out, it)
	}
	slices.SortStableFunc(out, func(a, b Iface) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if a.Prefix.Addr().Is4() != b.Prefix.Addr().Is4() {
			if a.Prefix.Addr().Is4() {
				return -1
			}
			return 1
		}
		return 0
	})
	return out, nil
}
