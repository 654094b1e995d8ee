package job

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/netif"
)

// maxAutoRails bounds the rails found automatically: beyond a few NICs,
// the split's gain is small and every rail costs a connection per peer.
const maxAutoRails = 4

// railAddrs decides the local addresses TCP listens on, one per rail.
// Configured rails (config.Config.Rails) are hosts, host:port or interface names.
// Without them, a job on one node uses loopback; a job across nodes uses
// every network all its nodes are on, the one that reaches the job's
// server (or the launcher's -iface) first, so that no node needs
// configuring by hand. That costs one more exchange through the server.
func railAddrs(ctx context.Context, job *boot.Job, cfg config.Config) ([]string, error) {
	if len(cfg.Rails) > 0 {
		return listenAddrs(cfg.Rails)
	}
	if job.LocalSize >= job.Size {
		return []string{"127.0.0.1:0"}, nil
	}
	mine, err := netif.Candidates()
	if err != nil {
		return nil, err
	}
	primary := primaryIface(job)
	if err := job.KV.Put(ctx, railsKey(job.Rank), formatNets(mine)); err != nil {
		return nil, fmt.Errorf("publishing this rank's networks: %w", err)
	}
	if err := job.KV.Fence(ctx); err != nil {
		return nil, fmt.Errorf("network exchange: %w", err)
	}
	keys := make([]string, job.Size)
	for p := range keys {
		keys[p] = railsKey(p)
	}
	vals, err := boot.GetAll(ctx, job.KV, keys)
	if err != nil {
		return nil, fmt.Errorf("networks of the ranks: %w", err)
	}
	common := map[netip.Prefix]int{}
	for _, v := range vals {
		for _, n := range parseNets(v) {
			common[n]++
		}
	}
	var picked []netif.Iface
	for _, it := range mine {
		if common[it.Prefix.Masked()] == job.Size {
			picked = append(picked, it)
		}
	}
	// The primary network first, then by network: rail i is then the same
	// network on every rank.
	slices.SortStableFunc(picked, func(a, b netif.Iface) int {
		ap, bp := a.Prefix.Masked() == primary, b.Prefix.Masked() == primary
		if ap != bp {
			if ap {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Prefix.Masked().String(), b.Prefix.Masked().String())
	})
	if len(picked) == 0 {
		return nil, fmt.Errorf("the nodes of this job share no network (this one has %s): set %s", formatNets(mine), config.EnvRails)
	}
	if len(picked) > maxAutoRails {
		picked = picked[:maxAutoRails]
	}
	out := make([]string, len(picked))
	for i, it := range picked {
		out[i] = net.JoinHostPort(it.Prefix.Addr().String(), "0")
	}
	return out, nil
}

// primaryIface is the network of the interface the launcher named, else
// of the one that reaches the job's server; the zero prefix when unknown.
func primaryIface(job *boot.Job) netip.Prefix {
	if job.Iface != "" {
		if it, err := netif.ByName(job.Iface); err == nil {
			return it.Prefix.Masked()
		}
	}
	if job.Server != "" {
		if it, err := netif.Toward(job.Server); err == nil {
			return it.Prefix.Masked()
		}
	}
	return netip.Prefix{}
}

func railsKey(rank int) string { return fmt.Sprintf("nets/%d", rank) }

// formatNets lists the networks of ifs ("10.88.1.0/24,10.88.2.0/24").
func formatNets(ifs []netif.Iface) string {
	s := make([]string, len(ifs))
	for i, it := range ifs {
		s[i] = it.Prefix.Masked().String()
	}
	return strings.Join(s, ",")
}

// parseNets reads formatNets' output; what does not parse is no network.
func parseNets(v string) []netip.Prefix {
	var out []netip.Prefix
	for _, f := range strings.Split(v, ",") {
		if p, err := netip.ParsePrefix(strings.TrimSpace(f)); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// listenAddrs turns configured rails into listen addresses: a bare host
// listens on any free port; an interface name on its address.
func listenAddrs(rails []string) ([]string, error) {
	var out []string
	for _, r := range rails {
		if _, _, err := net.SplitHostPort(r); err != nil {
			if ip := net.ParseIP(r); ip == nil {
				if strings.ContainsAny(r, ":") {
					return nil, fmt.Errorf("%s: rail %q is not a host, host:port or interface", config.EnvRails, r)
				}
				if it, err := netif.ByName(r); err == nil {
					r = it.Prefix.Addr().String()
				}
				// Else a host name, resolved by listening.
			}
			r = net.JoinHostPort(r, "0")
		}
		out = append(out, r)
	}
	return out, nil
}
