package bench

import (
	"context"
	"testing"

	"github.com/commtune/commtune"
)

// TestFloor runs the floor on two goroutine ranks (their shared region is
// ordinary memory: the process pair's code runs all the same) and checks
// the report's shape and that the allreduce pattern exchanged its values.
func TestFloor(t *testing.T) {
	const calls = 200
	var rep *FloorReport
	err := commtune.Local(2, func(c *commtune.Comm) error {
		r, err := Floor(context.Background(), c, FloorConfig{Calls: calls})
		if c.Rank() == 0 {
			rep = r
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep == nil || rep.Bench != "floor" || rep.Calls != calls || rep.ProcessAllreduceSum != 2 {
		t.Fatalf("report %+v", rep)
	}
	rep.GoroutinePingPong, rep.GoroutineAllreduce = FloorGoroutines(calls)
	for name, s := range map[string]FloorTimes{"process ping-pong": rep.ProcessPingPong, "process allreduce": rep.ProcessAllreduce,
		"goroutine ping-pong": rep.GoroutinePingPong, "goroutine allreduce": rep.GoroutineAllreduce} {
		if !(s.Mean > 0 && s.P50 > 0 && s.P50 <= s.P99 && s.P99 <= s.Max && s.Mean <= s.Max) {
			t.Errorf("%s: %+v", name, s)
		}
	}
	for _, bad := range []FloorConfig{{Calls: 0}} {
		err := commtune.Local(2, func(c *commtune.Comm) error {
			_, err := Floor(context.Background(), c, bad)
			return err
		})
		if err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
