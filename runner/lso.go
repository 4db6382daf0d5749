package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/verity-kafka/verity/harness"
)

// offsetsSource is what the LSO watch needs of a cluster; *harness.Cluster has it.
type offsetsSource interface {
	Offsets(ctx context.Context, topic string, partition int32) (harness.Offsets, error)
}

// lsoStall is the longest stretch during which a partition's last stable offset stayed put
// while its high watermark went on: read_committed readers stalled behind an open transaction.
type lsoStall struct {
	topic      string
	partition  int32
	lso        int64         // where the LSO stood
	hwGain     int64         // how far the HW advanced meanwhile
	length     time.Duration // how long
	since, til time.Duration // from the start of the watch
}

func (s lsoStall) String() string {
	return fmt.Sprintf("the LSO of %s-%d stayed at %d for %s (%.0f s to %.0f s into the run) while the high watermark advanced by %d: read_committed readers waited behind an open transaction",
		s.topic, s.partition, s.lso, s.length.Round(100*time.Millisecond), s.since.Seconds(), s.til.Seconds(), s.hwGain)
}

// watchLSO samples the HW and LSO of the partitions every interval until ctx ends and returns
// each partition's longest stall, if it lasted at least minStall. It measures what the history
// cannot show: the LSO is a broker's view, not something a client op returns.
func watchLSO(ctx context.Context, c offsetsSource, parts map[string]int32, every, minStall time.Duration) []lsoStall {
	type state struct {
		lso, hwAt int64
		since     time.Duration
		best      lsoStall
		seen      bool
	}
	began := time.Now()
	st := map[string]*state{}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		now := time.Since(began)
		for topic, n := range parts {
			for p := range n {
				qctx, cancel := context.WithTimeout(ctx, every)
				o, err := c.Offsets(qctx, topic, p)
				cancel()
				if err != nil {
					continue // a fault may hide the partition for a while; the next sample counts
				}
				key := fmt.Sprintf("%s-%d", topic, p)
				s := st[key]
				if s == nil {
					s = &state{}
					st[key] = s
				}
				if !s.seen || o.LastStable != s.lso {
					s.seen, s.lso, s.hwAt, s.since = true, o.LastStable, o.HighWatermark, now
					continue
				}
				if gain := o.HighWatermark - s.hwAt; gain > 0 && now-s.since > s.best.length {
					s.best = lsoStall{topic: topic, partition: p, lso: s.lso, hwGain: gain, length: now - s.since, since: s.since, til: now}
				}
			}
		}
		select {
		case <-ctx.Done():
			var out []lsoStall
			for _, s := range st {
				if s.best.hwGain > 0 && s.best.length >= minStall {
					out = append(out, s.best)
				}
			}
			return out
		case <-tick.C:
		}
	}
}
