package comm

import (
	"context"
	"testing"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/job"
)

// BenchmarkObserveColl is what observing a blocking collective costs the
// caller, per mode, around no work: BeginColl and EndColl of a call the
// node segment carried.
func BenchmarkObserveColl(b *testing.B) {
	for _, mode := range []struct {
		name  string
		count bool
	}{{"off", false}, {"counters", true}} {
		b.Run(mode.name, func(b *testing.B) {
			cfg, err := config.Build(func(string) (string, bool) { return "", false }, nil)
			if err != nil {
				b.Fatal(err)
			}
			eps, err := job.Local(1, cfg)
			if err != nil {
				b.Fatal(err)
			}
			c := NewWorld(eps[0], 0, 1)
			defer c.Close()
			c.ep.Obs.Observe(mode.count, false)
			l := coll.Layout{Bytes: 8, Elem: 8}
			ctx := context.Background()
			for b.Loop() {
				t := c.BeginColl(coll.OpAllreduce, true)
				if t.On() {
					c.EndColl(ctx, t, &l, true, "", ChosenByTable, nil)
				}
			}
		})
	}
}
