package verify

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/results"
)

// CheckFile checks the saved history at path offline: it judges by the settings in the
// history's header (changed by opts.Adjust, when set) and returns results.json's content
// (without the run's timings, which only the run knows). An unreadable file, header or line is
// an error that says which; a header whose config the checker cannot read fully (a key it does
// not know) is one, naming the key.
func CheckFile(ctx context.Context, path string, opts Options) (*results.Results, error) {
	start := time.Now()
	rd, err := history.Open(path)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	// Decode on the other cores while this goroutine checks: decoding costs about as much.
	rd.ReadAhead(runtime.GOMAXPROCS(0))
	h := rd.Header()
	cfg := h.Config
	if opts.Adjust != nil {
		if cfg, err = opts.Adjust(cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	r, err := Check(ctx, rd, cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Seed = h.Seed
	r.Config = h.Config
	r.History.Path = path
	if t := rd.Torn(); t > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("line %d was torn (the run stopped mid-write) and was skipped", t))
	}
	r.Overrides = opts.Overrides
	r.Timings.CheckS = time.Since(start).Seconds()
	return r, nil
}
