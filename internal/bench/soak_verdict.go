package bench

import (
	"fmt"
	"time"
)

// SoakSample is what a soak's ranks hold together at one sample, taken
// between steps after a barrier.
type SoakSample struct {
	Elapsed       time.Duration `json:"elapsed_ns"`
	Steps         int64         `json:"steps"`          // steps run so far
	RSSSum        int64         `json:"rss_sum"`        // bytes, summed over ranks
	RSSMax        int64         `json:"rss_max"`        // bytes, the largest rank's
	RSSAnon       int64         `json:"rss_anon"`       // bytes of RSSSum that are anonymous memory (heap, stacks, runtime)
	RSSFile       int64         `json:"rss_file"`       // bytes of RSSSum that are the program's file pages (code)
	RSSShmem      int64         `json:"rss_shmem"`      // bytes of RSSSum that are shared memory touched
	GoHeap        int64         `json:"go_heap"`        // bytes of Go heap found live, summed over ranks
	ShmMapped     int64         `json:"shm_mapped"`     // bytes of /dev/shm files mapped, summed over ranks
	ShmFiles      int64         `json:"shm_files"`      // bytes of the job's /dev/shm files
	FDs           int64         `json:"fds"`            // open descriptors, summed over ranks
	Goroutines    int64         `json:"goroutines"`     // summed over ranks
	PayloadErrors int64         `json:"payload_errors"` // wrong payloads so far, summed over ranks
}

// String is the sample's progress line.
func (s SoakSample) String() string {
	return fmt.Sprintf("%8s  steps %8d  rss sum %s max %s (anon %s file %s shmem %s; go heap %s)  shm mapped %s files %s  fds %5d  goroutines %5d  payload errors %d",
		s.Elapsed.Round(time.Second), s.Steps, mib(s.RSSSum), mib(s.RSSMax), mib(s.RSSAnon), mib(s.RSSFile), mib(s.RSSShmem), mib(s.GoHeap),
		mib(s.ShmMapped), mib(s.ShmFiles), s.FDs, s.Goroutines, s.PayloadErrors)
}

// SoakGrowthLimit is how much a memory figure may grow over a soak: the
// mean of the last third of the samples at most this much above the mean
// of the first third. Go's heap, read after a collection that returns
// what it freed, moves by a few percent with what the last step left
// live; a leak grows without end and passes the limit in a long run.
const SoakGrowthLimit = 0.05

// SoakWarmup is how many samples the verdict leaves out: the first
// interval opens the connections, rings and segments the job keeps for
// good, and fills the runtime's caches.
const SoakWarmup = 1

// SoakVerdict is the outcome of a soak.
type SoakVerdict struct {
	Pass     bool     `json:"pass"`
	Failures []string `json:"failures,omitempty"` // one line per broken rule
}

// JudgeSoak applies the soak's rules to its samples, in order: no payload
// error; at least two samples after the warm-up (SoakWarmup), with steps
// run; RSS, mapped shared memory and the job's shared-memory files flat
// (the mean of the last third of the samples after the warm-up no more
// than SoakGrowthLimit above the mean of the first third; a fall is no
// leak); descriptors and goroutines at the last sample equal to those at
// the first after the warm-up, every sample being taken at a quiescent
// point.
func JudgeSoak(samples []SoakSample) SoakVerdict {
	var v SoakVerdict
	fail := func(format string, args ...any) { v.Failures = append(v.Failures, fmt.Sprintf(format, args...)) }
	if len(samples) > 0 {
		if e := samples[len(samples)-1].PayloadErrors; e != 0 {
			fail("%d payload errors", e)
		}
	}
	if len(samples) < SoakWarmup+2 {
		fail("%d samples: want at least %d (the first is a warm-up); run longer or sample more often", len(samples), SoakWarmup+2)
		return v
	}
	s := samples[SoakWarmup:]
	first, last := s[0], s[len(s)-1]
	if last.Steps <= samples[0].Steps {
		fail("no steps ran after the warm-up (%d steps at its end, %d at the last sample)", samples[0].Steps, last.Steps)
	}
	k := max(len(s)/3, 1)
	for _, f := range []struct {
		name string
		get  func(SoakSample) int64
	}{
		{"RSS (sum over ranks)", func(x SoakSample) int64 { return x.RSSSum }},
		{"mapped shared memory", func(x SoakSample) int64 { return x.ShmMapped }},
		{"the job's shared-memory files", func(x SoakSample) int64 { return x.ShmFiles }},
	} {
		a, b := meanOf(s[:k], f.get), meanOf(s[len(s)-k:], f.get)
		if b > a*(1+SoakGrowthLimit) {
			fail("%s grew %.1f %%: %s on average over the first %d samples after the warm-up, %s over the last %d (limit %.0f %%)",
				f.name, 100*(b/a-1), mib(int64(a)), k, mib(int64(b)), k, 100*SoakGrowthLimit)
		}
	}
	if last.FDs != first.FDs {
		fail("open descriptors went from %d to %d (first sample after the warm-up to the last)", first.FDs, last.FDs)
	}
	if last.Goroutines != first.Goroutines {
		fail("goroutines went from %d to %d (first sample after the warm-up to the last)", first.Goroutines, last.Goroutines)
	}
	v.Pass = len(v.Failures) == 0
	return v
}

// mib formats bytes in MiB, to a tenth: the figures a soak compares.
func mib(b int64) string { return fmt.Sprintf("%7.1f MiB", float64(b)/(1<<20)) }

func meanOf(s []SoakSample, get func(SoakSample) int64) float64 {
	var t float64
	for _, x := range s {
		t += float64(get(x))
	}
	return t / float64(len(s))
}
