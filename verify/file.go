package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// CheckFile checks the saved history at path offline: it judges with the config in the
// history's header, with ov forced on top, and returns results.json's content (without the
// run's timings, which only the run knows). An unreadable file, header or line is an error
// that says which.
func CheckFile(ctx context.Context, path string, ov guarantee.Overrides, opts Options) (*results.Results, error) {
	start := time.Now()
	rd, err := history.Open(path)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	h := rd.Header()
	cfg, warnings, err := guarantee.Decode(h.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg = cfg.Apply(ov)
	r, err := Check(ctx, rd, cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Seed = h.Seed
	r.Config = h.Config
	if len(r.Config) == 0 || string(r.Config) == "null" {
		r.Config = json.RawMessage(`{}`)
	}
	r.History.Path = path
	r.Notes = append(r.Notes, warnings...)
	if t := rd.Torn(); t > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("line %d was torn (the run stopped mid-write) and was skipped", t))
	}
	r.Overrides = ov.Strings()
	r.Timings.CheckS = time.Since(start).Seconds()
	return r, nil
}
