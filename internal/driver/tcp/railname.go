package tcp

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/commtune/commtune/internal/netif"
)

// railName is the identity of the rail listening on addr: the interface
// that holds the address and its family ("eth1/ipv4"), or "rail<i>/…"
// when no interface holds it.
func railName(addr net.Addr, index int) string {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return fmt.Sprintf("rail%d", index)
	}
	a := ap.Addr().Unmap()
	if it, err := netif.ByAddr(a); err == nil {
		return it.Identity()
	}
	return netif.Identity(fmt.Sprintf("rail%d", index), a)
}
