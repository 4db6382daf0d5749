package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// do sends one request to h and returns the recorded answer. key "" sends no Idempotency-Key.
func do(t *testing.T, h http.Handler, method, path, key, body string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func newTestLedger(t *testing.T) *ledger {
	t.Helper()
	return newLedger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// getLedger reads GET /ledger, checking its status and that it decodes.
func getLedger(t *testing.T, h http.Handler) listing {
	t.Helper()
	rec := do(t, h, http.MethodGet, "/ledger", "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /ledger: status %d, body %s", rec.Code, rec.Body)
	}
	var l listing
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
		t.Fatalf("GET /ledger: %v in %s", err, rec.Body)
	}
	return l
}

func decodeReceipt(t *testing.T, rec *httptest.ResponseRecorder) receipt {
	t.Helper()
	var r receipt
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("answer %q: %v", rec.Body, err)
	}
	return r
}

func TestUnkeyedRepeatsApplyEveryTime(t *testing.T) {
	l := newTestLedger(t)
	const body = `{"event_id":"e-1","amount":100,"source":"c-1"}`
	for i := 1; i <= 2; i++ {
		rec := do(t, l, http.MethodPost, "/payments", "", body)
		if rec.Code != http.StatusCreated {
			t.Fatalf("request %d: status %d, want 201; body %s", i, rec.Code, rec.Body)
		}
		if got, want := decodeReceipt(t, rec), (receipt{Seq: i, EventID: "e-1", Applied: true}); got != want {
			t.Errorf("request %d: answer %+v, want %+v", i, got, want)
		}
		if rec.Header().Get(replayedHeader) != "" {
			t.Errorf("request %d: an unkeyed answer is marked %s", i, replayedHeader)
		}
	}
	got := getLedger(t, l)
	if len(got.Entries) != 2 || got.Keys != 0 || got.Replays != 0 {
		t.Fatalf("ledger %+v, want 2 entries, 0 keys, 0 replays", got)
	}
	for i, e := range got.Entries {
		if e.Seq != i+1 || e.EventID != "e-1" || e.Amount != 100 || e.Source != "c-1" || e.IdempotencyKey != "" {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
}

func TestKeyedRepeatsApplyOnceWithIdenticalAnswers(t *testing.T) {
	l := newTestLedger(t)
	first := do(t, l, http.MethodPost, "/payments", "k-1", `{"event_id":"e-1","amount":100,"source":"c-1"}`)
	if first.Code != http.StatusCreated {
		t.Fatalf("first: status %d, body %s", first.Code, first.Body)
	}
	if first.Header().Get(replayedHeader) != "" {
		t.Errorf("first answer is marked %s", replayedHeader)
	}
	// An unkeyed payment in between moves seq on, so a replay that recomputed its answer
	// instead of repeating the first one would show a different seq.
	do(t, l, http.MethodPost, "/payments", "", `{"event_id":"e-2","amount":5}`)
	// The last retry comes from another consumer (another source): still the same payment.
	for i, body := range []string{
		`{"event_id":"e-1","amount":100,"source":"c-1"}`,
		`{"amount": 100, "event_id": "e-1", "source": "c-1"}`,
		`{"event_id":"e-1","amount":100,"source":"c-2"}`,
	} {
		rec := do(t, l, http.MethodPost, "/payments", "k-1", body)
		if rec.Code != first.Code || !bytes.Equal(rec.Body.Bytes(), first.Body.Bytes()) {
			t.Errorf("retry %d: %d %q, want the first answer %d %q", i, rec.Code, rec.Body, first.Code, first.Body)
		}
		if rec.Header().Get(replayedHeader) != "true" {
			t.Errorf("retry %d: not marked %s", i, replayedHeader)
		}
	}
	// A new key for the same event is a new payment: keys deduplicate requests, not events.
	if rec := do(t, l, http.MethodPost, "/payments", "k-2", `{"event_id":"e-1","amount":100}`); rec.Code != http.StatusCreated {
		t.Fatalf("new key: status %d, body %s", rec.Code, rec.Body)
	}
	got := getLedger(t, l)
	if len(got.Entries) != 3 || got.Keys != 2 || got.Replays != 3 {
		t.Fatalf("ledger %+v, want 3 entries, 2 keys, 3 replays", got)
	}
	if e := got.Entries[0]; e.EventID != "e-1" || e.IdempotencyKey != "k-1" || e.Source != "c-1" {
		t.Errorf("first entry %+v, want e-1 under k-1 from c-1", e)
	}
}

func TestKeyReusedForAnotherPaymentIs422(t *testing.T) {
	l := newTestLedger(t)
	first := do(t, l, http.MethodPost, "/payments", "k-1", `{"event_id":"e-1","amount":100}`)
	if first.Code != http.StatusCreated {
		t.Fatalf("first: status %d, body %s", first.Code, first.Body)
	}
	for _, body := range []string{
		`{"event_id":"e-2","amount":100}`, // another event
		`{"event_id":"e-1","amount":101}`, // another amount
		`{"event_id":"e-1"}`,              // amount 0
	} {
		rec := do(t, l, http.MethodPost, "/payments", "k-1", body)
		if rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d, want 422; body %s", body, rec.Code, rec.Body)
			continue
		}
		var e struct{ Error string }
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !strings.Contains(e.Error, `Idempotency-Key "k-1"`) {
			t.Errorf("%s: error %q (%v), want one naming the key", body, rec.Body, err)
		}
	}
	got := getLedger(t, l)
	if len(got.Entries) != 1 || got.Keys != 1 || got.Replays != 0 {
		t.Fatalf("ledger %+v, want 1 entry, 1 key, 0 replays", got)
	}
	// The key still answers its own payment.
	if rec := do(t, l, http.MethodPost, "/payments", "k-1", `{"event_id":"e-1","amount":100}`); !bytes.Equal(rec.Body.Bytes(), first.Body.Bytes()) {
		t.Errorf("retry after conflicts: %d %q, want %q", rec.Code, rec.Body, first.Body)
	}
}

// Many requests at once, keyed and unkeyed, straight into the handler so that they contend for
// it. The clock, read while a payment is being applied, is slowed so that requests pile up in the
// middle of one another's application: a check of the key and an apply that are not one step
// then let more than one request with the key through.
func TestConcurrentRequests(t *testing.T) {
	l := newTestLedger(t)
	l.now = func() time.Time { time.Sleep(200 * time.Microsecond); return time.Now().UTC() }
	const n = 50
	keyed := make([]*httptest.ResponseRecorder, n)
	unkeyed := make([]*httptest.ResponseRecorder, n)
	post := func(key, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(body))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		rec := httptest.NewRecorder()
		l.ServeHTTP(rec, req)
		return rec
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			keyed[i] = post("same-key", `{"event_id":"e-k","amount":7}`)
		})
		wg.Go(func() {
			<-start
			unkeyed[i] = post("", `{"event_id":"e-u","amount":1}`)
		})
	}
	close(start)
	wg.Wait()

	var first *httptest.ResponseRecorder // the one answer not marked as a replay
	for i, r := range keyed {
		if r.Code != http.StatusCreated || !bytes.Equal(r.Body.Bytes(), keyed[0].Body.Bytes()) {
			t.Errorf("keyed %d: %d %q, want 201 %q like the others", i, r.Code, r.Body, keyed[0].Body)
		}
		if r.Header().Get(replayedHeader) == "" {
			if first != nil {
				t.Errorf("keyed %d: a second answer not marked as a replay", i)
			}
			first = r
		}
	}
	if first == nil {
		t.Error("every keyed answer is marked as a replay")
	}
	seqs := make(map[int]bool)
	for i, r := range unkeyed {
		var rc receipt
		if r.Code != http.StatusCreated || json.Unmarshal(r.Body.Bytes(), &rc) != nil {
			t.Errorf("unkeyed %d: %d %q", i, r.Code, r.Body)
			continue
		}
		seqs[rc.Seq] = true
	}
	if len(seqs) != n {
		t.Errorf("unkeyed requests got %d distinct seqs, want %d", len(seqs), n)
	}
	got := getLedger(t, l)
	var applied int
	for i, e := range got.Entries {
		if e.Seq != i+1 {
			t.Errorf("entry %d has seq %d", i, e.Seq)
		}
		if e.EventID == "e-k" {
			applied++
		}
	}
	if applied != 1 || len(got.Entries) != n+1 || got.Keys != 1 || got.Replays != n-1 {
		t.Errorf("keyed payment applied %d times, ledger has %d entries, %d keys, %d replays; want 1, %d, 1, %d",
			applied, len(got.Entries), got.Keys, got.Replays, n+1, n-1)
	}
}

func TestBadRequests(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, key, body string
		header                        http.Header // added to the request
		status                        int
		errHas                        string // in the error message
	}{
		{name: "no body", method: "POST", path: "/payments", status: 400, errHas: "body is required"},
		{name: "blank body", method: "POST", path: "/payments", body: " \n", status: 400, errHas: "body is required"},
		{name: "bad JSON", method: "POST", path: "/payments", body: `{"event_id":`, status: 400, errHas: "not a JSON object"},
		{name: "not an object", method: "POST", path: "/payments", body: `["e-1"]`, status: 400, errHas: "not a JSON object"},
		{name: "amount not an integer", method: "POST", path: "/payments", body: `{"event_id":"e-1","amount":1.5}`, status: 400, errHas: "amount"},
		{name: "unknown field", method: "POST", path: "/payments", body: `{"eventId":"e-1","amount":1}`, status: 400, errHas: `unknown field "eventId"`},
		{name: "two objects", method: "POST", path: "/payments", body: `{"event_id":"e-1"}{"event_id":"e-2"}`, status: 400, errHas: "more after its JSON object"},
		{name: "empty event_id", method: "POST", path: "/payments", body: `{"event_id":"","amount":1}`, status: 400, errHas: "event_id is required"},
		{name: "missing event_id", method: "POST", path: "/payments", body: `{"amount":1}`, status: 400, errHas: "event_id is required"},
		{name: "null body", method: "POST", path: "/payments", body: `null`, status: 400, errHas: "event_id is required"},
		{name: "too large", method: "POST", path: "/payments", body: `{"event_id":"` + strings.Repeat("x", maxBody) + `"}`, status: 413, errHas: "larger than"},
		{name: "empty key", method: "POST", path: "/payments", body: `{"event_id":"e-1"}`, header: http.Header{"Idempotency-Key": {""}}, status: 400, errHas: "Idempotency-Key header is empty"},
		{name: "two keys", method: "POST", path: "/payments", body: `{"event_id":"e-1"}`, header: http.Header{"Idempotency-Key": {"a", "b"}}, status: 400, errHas: "more than one Idempotency-Key"},
		{name: "long key", method: "POST", path: "/payments", key: strings.Repeat("k", maxKeyLen+1), body: `{"event_id":"e-1"}`, status: 400, errHas: "longer than 255"},
		{name: "GET /payments", method: "GET", path: "/payments", status: 405, errHas: "use POST"},
		{name: "POST /ledger", method: "POST", path: "/ledger", body: `{"event_id":"e-1"}`, status: 405, errHas: "use GET"},
		{name: "DELETE /healthz", method: "DELETE", path: "/healthz", status: 405, errHas: "use GET"},
		{name: "unknown path", method: "POST", path: "/payment", body: `{"event_id":"e-1"}`, status: 404, errHas: `no such path "/payment"`},
		{name: "subpath", method: "GET", path: "/ledger/1", status: 404, errHas: "no such path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			var rd io.Reader
			if tc.body != "" {
				rd = strings.NewReader(tc.body)
			}
			req := httptest.NewRequest(tc.method, tc.path, rd)
			if tc.key != "" {
				req.Header.Set("Idempotency-Key", tc.key)
			}
			for k, vs := range tc.header {
				req.Header[k] = vs
			}
			rec := httptest.NewRecorder()
			l.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var e map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || len(e) != 1 || !strings.Contains(e["error"], tc.errHas) {
				t.Errorf("body %q (%v), want only an error containing %q", rec.Body, err, tc.errHas)
			}
			if tc.status == 405 && rec.Header().Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
			if got := getLedger(t, l); len(got.Entries) != 0 || got.Keys != 0 || got.Replays != 0 {
				t.Errorf("a refused request changed the ledger: %+v", got)
			}
		})
	}
}

// A refused request does not use up its key: the corrected request with the same key applies.
func TestRefusedRequestLeavesKeyUnused(t *testing.T) {
	l := newTestLedger(t)
	if rec := do(t, l, http.MethodPost, "/payments", "k-1", `{"event_id":""}`); rec.Code != http.StatusBadRequest {
		t.Fatalf("bad request: status %d, body %s", rec.Code, rec.Body)
	}
	rec := do(t, l, http.MethodPost, "/payments", "k-1", `{"event_id":"e-1","amount":3}`)
	if rec.Code != http.StatusCreated || rec.Header().Get(replayedHeader) != "" {
		t.Fatalf("corrected request: status %d, %s %q, body %s", rec.Code, replayedHeader, rec.Header().Get(replayedHeader), rec.Body)
	}
	if got := getLedger(t, l); len(got.Entries) != 1 || got.Keys != 1 || got.Replays != 0 {
		t.Fatalf("ledger %+v, want 1 entry, 1 key, 0 replays", got)
	}
}

func TestLedgerListing(t *testing.T) {
	l := newTestLedger(t)
	if raw := do(t, l, http.MethodGet, "/ledger", "", "").Body.String(); raw != `{"entries":[],"keys":0,"replays":0}`+"\n" {
		t.Errorf("empty ledger: %q", raw)
	}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l.now = func() time.Time { clock = clock.Add(1500 * time.Nanosecond); return clock }
	reqs := []struct{ key, body string }{
		{"", `{"event_id":"e-1","amount":10,"source":"c-1"}`},
		{"k-a", `{"event_id":"e-2","amount":20,"source":"c-1"}`},
		{"k-a", `{"event_id":"e-2","amount":20,"source":"c-2"}`}, // replay
		{"k-b", `{"event_id":"e-3","amount":-5}`},
		{"k-a", `{"event_id":"e-9","amount":20}`}, // 422: counts nothing
		{"", `{"event_id":"e-1","amount":10,"source":"c-2"}`},
		{"k-b", `{"event_id":"e-3","amount":-5}`}, // replay
	}
	for _, r := range reqs {
		do(t, l, http.MethodPost, "/payments", r.key, r.body)
	}
	rec := do(t, l, http.MethodGet, "/ledger", "", "")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /ledger: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	// The exact bytes: field names, order, omitted keys and the time format are what readers use.
	want := `{"entries":[` +
		`{"seq":1,"event_id":"e-1","amount":10,"source":"c-1","at":"2026-01-02T03:04:05.0000015Z"},` +
		`{"seq":2,"event_id":"e-2","amount":20,"source":"c-1","idempotency_key":"k-a","at":"2026-01-02T03:04:05.000003Z"},` +
		`{"seq":3,"event_id":"e-3","amount":-5,"source":"","idempotency_key":"k-b","at":"2026-01-02T03:04:05.0000045Z"},` +
		`{"seq":4,"event_id":"e-1","amount":10,"source":"c-2","at":"2026-01-02T03:04:05.000006Z"}` +
		`],"keys":2,"replays":2}` + "\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("GET /ledger:\n got %s\nwant %s", got, want)
	}
	if rec := do(t, l, http.MethodHead, "/ledger", "", ""); rec.Code != http.StatusOK {
		t.Errorf("HEAD /ledger: status %d", rec.Code)
	}
}

func TestHealthz(t *testing.T) {
	rec := do(t, newTestLedger(t), http.MethodGet, "/healthz", "", "")
	if rec.Code != http.StatusOK || rec.Body.String() != "ok\n" {
		t.Errorf("GET /healthz: %d %q, want 200 \"ok\\n\"", rec.Code, rec.Body)
	}
}

// run serves real requests on its address and returns 0 after a clean shutdown.
func TestRunServesAndShutsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan net.Addr, 1)
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-log-level", "debug"}, &logs, func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case code := <-done:
		t.Fatalf("run returned %d before listening; logs:\n%s", code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("run did not start listening")
	}
	resp, err := http.Post("http://"+addr.String()+"/payments", "application/json", strings.NewReader(`{"event_id":"e-1","amount":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /payments: status %d", resp.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d after shutdown, want 0; logs:\n%s", code, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context was done")
	}
	out := logs.String()
	for _, want := range []string{"verity-ledger listening", "level=DEBUG msg=applied", "shutting down", "stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
}

func TestRunBadUsage(t *testing.T) {
	for _, args := range [][]string{{"-log-level", "loud"}, {"-nope"}, {"extra"}} {
		if code := run(context.Background(), args, io.Discard, nil); code != 2 {
			t.Errorf("%q: exit code %d, want 2", args, code)
		}
	}
}

// syncBuffer is a bytes.Buffer that the server's goroutines and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
