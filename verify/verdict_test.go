package verify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestVerdict(t *testing.T) {
	a := at(rec("t", 0, "1-1"), 0)
	cases := []struct {
		name   string
		cfg    history.Config
		build  func(h *hb)
		want   results.Verdict
		reason string // a substring of some unknown reason
		cause  results.UnknownCause
	}{
		{"clean history", strict(), func(h *hb) {
			h.send(1, a, OK, 0)
			h.finalBoth("t", 0, 0, 1, a)
		}, results.Pass, "", ""},
		{"no ops", strict(), func(h *hb) {}, results.Unknown, "no ops", results.CauseHistoryMalformed},
		{"no final reads", strict(), func(h *hb) { h.send(1, a, OK, 0) }, results.Unknown, "no final reads", results.CauseFinalReadIncomplete},
		{"a written partition without a final read", strict(), func(h *hb) {
			h.send(1, a, OK, 0)
			h.send(1, rec("t", 1, "1-2"), OK, 0)
			h.finalBoth("t", 0, 0, 1, a)
		}, results.Unknown, "no final read of t-1", results.CauseFinalReadIncomplete},
		{"a final read that says it is incomplete", strict(), func(h *hb) {
			h.send(1, a, OK, 0)
			h.add(history.Op{Process: history.Client(99), Type: OK, F: history.FFinalRead,
				Value: history.Payload{FinalRead: &history.FinalRead{Topic: "t", Isolation: RU, End: 1, Incomplete: true}}})
		}, results.Unknown, "incomplete final reads of t-0", results.CauseFinalReadIncomplete},
		{"a final read that never completed", strict(), func(h *hb) {
			h.send(1, a, OK, 0)
			h.final("t", 0, RC, 0, 1, a)
			h.add(history.Op{Process: history.Client(99), Type: history.Invoke, F: history.FFinalRead,
				Value: history.Payload{FinalRead: &history.FinalRead{Topic: "t", Isolation: RU}}})
		}, results.Unknown, "incomplete final reads of t-0 (read_uncommitted", results.CauseFinalReadIncomplete},
		{"a final read that failed", strict(), func(h *hb) {
			h.send(1, a, OK, 0)
			h.add(history.Op{Process: history.Client(99), Type: history.Invoke, F: history.FFinalRead,
				Value: history.Payload{FinalRead: &history.FinalRead{Topic: "t", Isolation: RU}}})
			h.add(history.Op{Process: history.Client(99), Type: Fail, F: history.FFinalRead, Error: "timeout",
				Value: history.Payload{FinalRead: &history.FinalRead{Topic: "t", Isolation: RU}}})
		}, results.Unknown, "incomplete", results.CauseFinalReadIncomplete},
		{"final reads with a gap between ranges", strict(), func(h *hb) {
			h.send(1, a, OK, 0)
			h.final("t", 0, RU, 0, 1, a)
			h.final("t", 0, RU, 5, 9)
		}, results.Unknown, "gaps", results.CauseFinalReadIncomplete},
		{"a forbidden anomaly fails even when something is unknown", strict(), func(h *hb) {
			h.send(1, a, OK, 0)
			h.send(1, rec("t", 1, "1-2"), OK, 0)
			h.final("t", 0, RU, 0, 1)
		}, results.Fail, "no final read of t-1", results.CauseFinalReadIncomplete},
		{"permitted anomalies pass", acks1(), func(h *hb) {
			h.send(1, a, OK, 0)
			h.final("t", 0, RU, 0, 1)
		}, results.Pass, "", ""},
		{"an anomaly under settings no guarantee covers is unknown", func() history.Config {
			c := strict()
			c.Topic.MinInsyncReplicas = ptr(4)
			return c
		}(), func(h *hb) {
			h.send(1, a, OK, 0)
			h.final("t", 0, RU, 0, 1)
		}, results.Unknown, "no documented guarantee covers", results.CauseNoGuarantee},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHB()
			tc.build(h)
			r := h.check(tc.cfg)
			if r.Verdict != tc.want {
				t.Errorf("verdict %s, want %s (reasons %q)", r.Verdict, tc.want, r.UnknownReasons)
			}
			if tc.reason != "" && !strings.Contains(strings.Join(r.UnknownReasons, "\n"), tc.reason) {
				t.Errorf("unknown reasons %q lack %q", r.UnknownReasons, tc.reason)
			}
			if tc.cause != "" && !slices.Contains(r.UnknownCauses, tc.cause) {
				t.Errorf("unknown causes %q lack %q", r.UnknownCauses, tc.cause)
			}
			if len(r.UnknownCauses) == 0 != (len(r.UnknownReasons) == 0) {
				t.Errorf("unknown causes %q for reasons %q", r.UnknownCauses, r.UnknownReasons)
			}
			if tc.want == results.Pass && len(r.UnknownReasons) > 0 {
				t.Errorf("a pass with unknown reasons %q", r.UnknownReasons)
			}
		})
	}
}

// writeHistory writes h's ops after a header with cfg, and returns the file's path.
func writeHistory(t *testing.T, h *hb, cfg string, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	var b strings.Builder
	b.WriteString(`{"verity_history":1,"started":"2026-01-01T00:00:00Z","seed":7,"config":` + cfg + "}\n")
	for _, op := range h.ops {
		line, err := history.AppendOp(nil, op)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	b.WriteString(extra)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckFile(t *testing.T) {
	h := newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.final("t", 0, RU, 0, 0)
	cfg := `{"scenario":"s","producer":{"acks":"all","idempotence":true},"topic":{"replication_factor":3,"min_insync_replicas":2}}`

	t.Run("judged with the header's config", func(t *testing.T) {
		r, err := CheckFile(context.Background(), writeHistory(t, h, cfg, ""), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != results.Fail || r.Seed != 7 || r.Scenario != "s" || r.Config.Scenario != "s" || r.History.Ops != 4 {
			t.Errorf("results %+v", r)
		}
	})
	t.Run("flags override the header", func(t *testing.T) {
		one := kafkaconf.AcksLeader
		adjust := func(c history.Config) (history.Config, error) {
			c.Producer.Acks, c.Producer.Idempotence = &one, nil
			return c, nil
		}
		r, err := CheckFile(context.Background(), writeHistory(t, h, cfg, ""), Options{Adjust: adjust, Overrides: []string{"--acks=1"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != results.Pass || r.Anomalies[guarantee.LostWrite].Judgement != guarantee.Permitted || len(r.Overrides) != 1 {
			t.Errorf("verdict %s, lost-write %+v, overrides %v", r.Verdict, r.Anomalies[guarantee.LostWrite], r.Overrides)
		}
	})
	t.Run("a torn last line before the final reads", func(t *testing.T) {
		short := newHB()
		short.send(1, rec("t", 0, "1-1"), OK, 0)
		r, err := CheckFile(context.Background(), writeHistory(t, short, cfg, `{"i":2,"t":5,"p":99,"type":"inv`), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != results.Unknown || r.History.TornLine != 4 || !strings.Contains(strings.Join(r.UnknownReasons, " "), "torn line 4") {
			t.Errorf("verdict %s, torn %d, reasons %q", r.Verdict, r.History.TornLine, r.UnknownReasons)
		}
	})
	t.Run("a malformed line in the middle is an error with its line number", func(t *testing.T) {
		path := writeHistory(t, h, cfg, "{\"i\":9,\"t\":5,\"p\":1,\"type\":\"ok\",\"f\":\"send\",\"value\":null}\nnot json\n")
		_, err := CheckFile(context.Background(), path, Options{})
		var le *history.LineError
		if !errors.As(err, &le) || le.Line != 7 {
			t.Errorf("error %v, want a LineError at line 7", err)
		}
	})
	t.Run("a config the checker cannot read fully is an error naming the key", func(t *testing.T) {
		for raw, key := range map[string]string{`{"topic":"t"}`: "topic", `{"topic":{"min_isr":1}}`: `"min_isr"`, `{"acks":"all"}`: "acks"} {
			_, err := CheckFile(context.Background(), writeHistory(t, h, raw, ""), Options{})
			var le *history.LineError
			if !errors.As(err, &le) || le.Line != 1 || !strings.Contains(err.Error(), key) {
				t.Errorf("%s: error %v, want one at line 1 naming %s", raw, err, key)
			}
		}
	})
	t.Run("a missing file", func(t *testing.T) {
		if _, err := CheckFile(context.Background(), filepath.Join(t.TempDir(), "nope"), Options{}); err == nil {
			t.Error("want an error")
		}
	})
	t.Run("a cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := CheckFile(ctx, writeHistory(t, h, cfg, ""), Options{}); !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	})
}
