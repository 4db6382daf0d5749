package report_test

import (
	"fmt"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func ExampleCompareMarkdown() {
	run := func(lost int, j guarantee.Judgement, verdict results.Verdict) *results.Results {
		r := &results.Results{Verdict: verdict, Anomalies: map[guarantee.Anomaly]results.Anomaly{},
			Stats: results.Stats{UnavailableMs: 3000, LatencyMs: results.Percentiles{P99: 12.5},
				Ops: map[string]results.Outcomes{"send": {OK: 3000, Fail: 10}}}, Timings: results.Timings{RunS: 60}}
		r.Config.Client = &history.ClientInfo{Name: "franz-go", Version: "v1.22.3"}
		if lost > 0 {
			r.Anomalies[guarantee.LostWrite] = results.Anomaly{Count: lost, Judgement: j}
		}
		return r
	}
	cells := []report.Cell{
		{Axes: []report.Axis{{Name: "acks", Value: "1"}}, Run: 1, Results: run(4, guarantee.Permitted, results.Pass)},
		{Axes: []report.Axis{{Name: "acks", Value: "1"}}, Run: 2, Results: run(0, guarantee.Permitted, results.Pass)},
		{Axes: []report.Axis{{Name: "acks", Value: "all"}}, Run: 1, Results: run(1, guarantee.Forbidden, results.Fail)},
	}
	fmt.Print(report.CompareMarkdown(cells))
	// Output:
	// | acks | client | runs | lost | duplicate | reordered | other anomalies | write availability | acked writes/s | p99 latency | verdict |
	// | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
	// | 1 | franz-go v1.22.3 | 2 | 4 in 1/2 runs (permitted) | 0 | 0 | 0 | 95.0 % | 50 | 12.5 ms | pass ×2 |
	// | all | franz-go v1.22.3 | 1 | 1 (forbidden) | 0 | 0 | 0 | 95.0 % | 50 | 12.5 ms | fail |
}
