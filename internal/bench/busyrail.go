package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/netif"
	"github.com/commtune/commtune/internal/sched"
)

// BusyWindow is one slice of a busy-rail run.
type BusyWindow struct {
	StartMS       float64 `json:"start_ms"`
	Busy          bool    `json:"busy"`           // the foreign stream ran on rail 0
	Messages      int     `json:"messages"`       // sends completed in the window
	BandwidthMBps float64 `json:"bandwidth_MBps"` // split messages: their bytes over their times (send + ack)
	Share0        float64 `json:"share0"`         // fraction of the split messages' bytes rail 0 carried
	// Rail0MBps and Rail1MBps are the probes' bandwidths: every
	// busyProbe-th message goes on rail 0 alone, the next on rail 1 alone,
	// for what each can carry in that window.
	Rail0MBps float64 `json:"rail0_MBps"`
	Rail1MBps float64 `json:"rail1_MBps"`
	Factor0   float64 `json:"factor0"` // rail 0's learned correction at the window's end
	// Searched0 is the share the scheduler gives rail 0 at the window's
	// end while it searches the split of a loaded rail 0
	// (sched.Scheduler.SearchedShare); 0 otherwise.
	Searched0 float64 `json:"searched0"`
}

// BusyReport is what `bench multirail --busy` prints.
type BusyReport struct {
	Bench   string       `json:"bench"`
	Bytes   int          `json:"bytes"`
	Period  float64      `json:"period_s"` // quiet, busy and quiet again, each this long
	Windows []BusyWindow `json:"windows"`
	// Phases sums the windows of each period: before the stream, under
	// it and after it, the first window of the last two left out (the
	// split is moving its load then).
	Phases []BusyPhase `json:"phases"`
}

// BusyPhase is a span of windows taken together: its bandwidths are bytes
// over time summed across the span, not a mean of the windows' figures.
type BusyPhase struct {
	Name          string  `json:"name"`
	Messages      int     `json:"messages"`
	BandwidthMBps float64 `json:"bandwidth_MBps"`
	Rail0MBps     float64 `json:"rail0_MBps"`
	Rail1MBps     float64 `json:"rail1_MBps"`
	Share0        float64 `json:"share0"`
	// OfSum is BandwidthMBps over Rail0MBps + Rail1MBps: the split against
	// what the two rails alone carried in the same span.
	OfSum float64 `json:"of_sum"`
}

// busyWindows is how many windows each period is cut into.
const busyWindows = 8

// busyProbe: of every busyProbe+2 messages, busyProbe are split and one
// goes on each rail alone.
const busyProbe = 4

// tagBusy carries the busy-rail run's messages, acks and sink address.
const tagBusy = 40

// MultirailBusy runs on ranks 0 and 1 of c: rank 0 sends size-byte
// messages to rank 1 under the curves split (and probes on each rail
// alone, see busyProbe), each acknowledged with 8 bytes, for three
// periods; during the second a plain TCP stream from rank 0 to rank 1
// saturates rail 0. Rank 0 returns what each window carried on which
// rail, and rail 0's learned correction.
func MultirailBusy(ctx context.Context, c *commtune.Comm, ep control.Endpoint, size int, period time.Duration) (*BusyReport, error) {
	if c.Size() != 2 {
		return nil, fmt.Errorf("bench multirail --busy needs exactly 2 ranks, have %d", c.Size())
	}
	peer := 1 - c.Rank()
	rails := ep.Rails(peer)
	models := ep.RailModels(peer)
	if len(rails) < 2 || models[0] == nil {
		return nil, fmt.Errorf("bench multirail --busy: needs two rails with sampled curves")
	}
	defer ep.SetStrategy(nil)
	ip, err := railIP(rails[0].Name)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	ack := make([]byte, 8)
	if c.Rank() == 1 {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		go func() {
			if conn, err := ln.Accept(); err == nil {
				io.Copy(io.Discard, conn)
				conn.Close()
			}
		}()
		if err := c.Send(ctx, []byte(ln.Addr().String()), 0, tagBusy); err != nil {
			return nil, err
		}
		for {
			st, err := c.Recv(ctx, buf, 0, tagBusy)
			if err != nil {
				return nil, err
			}
			if st.Count == 0 {
				return nil, nil
			}
			if err := c.Send(ctx, ack, 0, tagBusy); err != nil {
				return nil, err
			}
		}
	}
	addr := make([]byte, 128)
	st, err := c.Recv(ctx, addr, 1, tagBusy)
	if err != nil {
		return nil, err
	}
	sink := string(addr[:st.Count])
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	stream, err := d.DialContext(ctx, "tcp", sink)
	if err != nil {
		return nil, fmt.Errorf("the foreign stream to %s: %w", sink, err)
	}
	defer stream.Close()
	rep := &BusyReport{Bench: "multirail-busy", Bytes: size, Period: period.Seconds()}
	win := period / busyWindows
	for i := 0; i < 3*busyWindows; i++ {
		rep.Windows = append(rep.Windows, BusyWindow{StartMS: float64(time.Duration(i)*win) / 1e6, Busy: i/busyWindows == 1})
	}
	var spent [busyWindowsMax]time.Duration
	var bytes0, bytesAll [busyWindowsMax]int64
	var probeTime [busyWindowsMax][2]time.Duration
	var probes [busyWindowsMax][2]int
	split := sched.Split{Rule: sched.SplitCurves}
	start := time.Now()
	stop := make(chan struct{})
	done := make(chan struct{})
	started := false
	msgs := 0
	for {
		t := time.Since(start)
		if t >= 3*period {
			break
		}
		if !started && t >= period {
			started = true
			go blast(stream, start.Add(2*period), stop, done)
		}
		probe := -1
		if k := msgs % (busyProbe + 2); k >= busyProbe {
			probe = k - busyProbe
			ep.SetStrategy(sched.Single{Rail: probe})
		} else {
			ep.SetStrategy(split)
		}
		msgs++
		before := ep.RailBytes(peer)
		t0 := time.Now()
		if err := c.Send(ctx, buf, 1, tagBusy); err != nil {
			return nil, err
		}
		if _, err := c.Recv(ctx, ack, 1, tagBusy); err != nil {
			return nil, err
		}
		dt := time.Since(t0)
		after := ep.RailBytes(peer)
		w := min(int(t/win), 3*busyWindows-1)
		if probe >= 0 {
			probeTime[w][probe] += dt
			probes[w][probe]++
			continue
		}
		spent[w] += dt
		bytes0[w] += after[0] - before[0]
		for i := range after {
			bytesAll[w] += after[i] - before[i]
		}
		rep.Windows[w].Messages++
		rep.Windows[w].Factor0 = models[0].Factor()
		if rail, share := ep.SearchedShare(peer); rail == 0 {
			rep.Windows[w].Searched0 = share
		}
	}
	close(stop)
	if started {
		<-done
	}
	if err := c.Send(ctx, nil, 1, tagBusy); err != nil {
		return nil, err
	}
	rate := func(msgs int, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(msgs*size) / d.Seconds() / 1e6
	}
	for i := range rep.Windows {
		rep.Windows[i].BandwidthMBps = rate(rep.Windows[i].Messages, spent[i])
		if bytesAll[i] > 0 {
			rep.Windows[i].Share0 = float64(bytes0[i]) / float64(bytesAll[i])
		}
		rep.Windows[i].Rail0MBps = rate(probes[i][0], probeTime[i][0])
		rep.Windows[i].Rail1MBps = rate(probes[i][1], probeTime[i][1])
	}
	for _, ph := range []struct {
		name     string
		from, to int // windows [from, to)
	}{{"before", 0, busyWindows}, {"stream", busyWindows + 1, 2 * busyWindows}, {"after", 2*busyWindows + 1, 3 * busyWindows}} {
		var x BusyPhase
		var sp time.Duration
		var pt [2]time.Duration
		var pn [2]int
		var b0, ball int64
		for i := ph.from; i < ph.to; i++ {
			x.Messages += rep.Windows[i].Messages
			sp += spent[i]
			b0, ball = b0+bytes0[i], ball+bytesAll[i]
			for r := range pt {
				pt[r] += probeTime[i][r]
				pn[r] += probes[i][r]
			}
		}
		x.Name, x.BandwidthMBps = ph.name, rate(x.Messages, sp)
		x.Rail0MBps, x.Rail1MBps = rate(pn[0], pt[0]), rate(pn[1], pt[1])
		if ball > 0 {
			x.Share0 = float64(b0) / float64(ball)
		}
		if x.Rail0MBps > 0 && x.Rail1MBps > 0 {
			x.OfSum = x.BandwidthMBps / (x.Rail0MBps + x.Rail1MBps)
		}
		rep.Phases = append(rep.Phases, x)
	}
	return rep, nil
}

// busyWindowsMax bounds the windows of a run (three periods).
const busyWindowsMax = 3 * busyWindows

// blast writes to conn until the deadline or stop, then closes done.
func blast(conn net.Conn, until time.Time, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	chunk := make([]byte, 256<<10)
	binary.LittleEndian.PutUint64(chunk, 1)
	conn.SetWriteDeadline(until)
	for {
		select {
		case <-stop:
			return
		default:
		}
		if _, err := conn.Write(chunk); err != nil {
			return // the deadline, or the sink went away
		}
	}
}

// railIP is the address of the interface a rail's identity names
// ("rbr0/ipv4").
func railIP(name string) (string, error) {
	iface, _, _ := strings.Cut(name, "/")
	it, err := netif.ByName(iface)
	if err != nil {
		return "", fmt.Errorf("rail %s: %w", name, err)
	}
	return it.Prefix.Addr().String(), nil
}
