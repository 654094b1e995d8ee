package commtune

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"

	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/driver/tcp"
)

// Init finds the job this process belongs to and returns its world
// communicator. Under `commtune run` it reads the launcher's COMMTUNE_*
// variables, exchanges addresses through the launcher and connects to every
// other rank over TCP (authenticated with the job's secret); with no
// launcher it returns a communicator of size 1. Close the communicator
// before the process exits.
func Init(ctx context.Context, opts ...Option) (*Comm, error) {
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	job, err := boot.Discover(ctx)
	if err != nil {
		return nil, fmt.Errorf("commtune: init: %w", err)
	}
	cfg.defaultSpin(job.LocalSize, runtime.NumCPU())
	ep, err := newEndpoint(job.Rank, job.Size, cfg)
	if err != nil {
		job.Close()
		return nil, err
	}
	ep.release = job.Close
	if job.Size > 1 {
		if err := connectTCP(ctx, ep, job, cfg); err != nil {
			return nil, errors.Join(fmt.Errorf("commtune: init: %w", err), ep.close())
		}
	}
	if err := ep.ready(); err != nil {
		return nil, errors.Join(err, ep.close())
	}
	return newWorld(ep, job.Rank, job.Size), nil
}

// connectTCP listens on the configured rails, publishes their addresses
// through the job's key-value service and meshes with every other rank.
func connectTCP(ctx context.Context, ep *endpoint, job *boot.Job, cfg Config) error {
	listen, err := listenAddrs(cfg.Rails)
	if err != nil {
		return err
	}
	t, err := tcp.Listen(tcp.Config{
		Rank: job.Rank, Size: job.Size, Secret: job.Secret, Handler: ep.eng,
		ListenAddrs: listen, ConnectTimeout: cfg.ConnectTimeout,
	})
	if err != nil {
		return err
	}
	if err := meshTCP(ctx, t, job); err != nil {
		return errors.Join(err, t.Close())
	}
	ep.attach(t)
	return nil
}

// meshTCP publishes t's addresses and connects to every other rank's.
func meshTCP(ctx context.Context, t *tcp.Transport, job *boot.Job) error {
	if err := job.KV.Put(ctx, tcpKey(job.Rank), strings.Join(t.Addrs(), ",")); err != nil {
		return fmt.Errorf("publishing tcp addresses: %w", err)
	}
	if err := job.KV.Fence(ctx); err != nil {
		return fmt.Errorf("address exchange: %w", err)
	}
	peers := make([][]string, job.Size)
	for p := range peers {
		v, err := job.KV.Get(ctx, tcpKey(p))
		if err != nil {
			return fmt.Errorf("tcp addresses of rank %d: %w", p, err)
		}
		peers[p] = strings.Split(v, ",")
		if len(peers[p]) != len(t.Addrs()) {
			return fmt.Errorf("rank %d has %d tcp rails, this rank %d: set %s alike on every rank",
				p, len(peers[p]), len(t.Addrs()), EnvRails)
		}
	}
	return t.Connect(ctx, peers)
}

func tcpKey(rank int) string { return fmt.Sprintf("tcp/%d", rank) }

// listenAddrs turns configured rails into listen addresses: a bare host
// listens on any free port.
func listenAddrs(rails []string) ([]string, error) {
	var out []string
	for _, r := range rails {
		if _, _, err := net.SplitHostPort(r); err != nil {
			if ip := net.ParseIP(r); ip == nil && strings.ContainsAny(r, ":") {
				return nil, fmt.Errorf("%s: rail %q is not a host or host:port", EnvRails, r)
			}
			r = net.JoinHostPort(r, "0")
		}
		out = append(out, r)
	}
	return out, nil
}
