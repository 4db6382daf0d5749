package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"
)

const (
	// maxBody bounds a request body: a payment is a few dozen bytes, and the bound keeps a broken
	// client from filling the memory the ledger lives in.
	maxBody = 1 << 20
	// maxKeyLen bounds an Idempotency-Key, as Stripe does (255 characters), because every key is
	// remembered for the life of the process.
	maxKeyLen = 255
	// replayedHeader marks an answer given from a remembered key (Stripe's name). It is a header,
	// not a body field, so that the body stays byte-identical to the first answer.
	replayedHeader = "Idempotent-Replayed"
)

// payment is the body of POST /payments.
type payment struct {
	EventID string `json:"event_id"`
	Amount  int64  `json:"amount"`
	Source  string `json:"source"`
}

// entry is one applied payment, as GET /ledger lists it.
type entry struct {
	Seq            int       `json:"seq"`
	EventID        string    `json:"event_id"`
	Amount         int64     `json:"amount"`
	Source         string    `json:"source"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	At             time.Time `json:"at"`
}

// receipt is the body of the answer to an applied payment.
type receipt struct {
	Seq     int    `json:"seq"`
	EventID string `json:"event_id"`
	Applied bool   `json:"applied"`
}

// listing is the body of GET /ledger.
type listing struct {
	Entries []entry `json:"entries"`
	Keys    int     `json:"keys"`
	Replays int     `json:"replays"`
}

// answer is what the first request with an idempotency key got, remembered so that every later
// request with that key gets the same bytes, and what it asked for, so that a reuse of the key for
// another payment can be told apart from a retry.
type answer struct {
	status  int
	body    []byte
	eventID string
	amount  int64
}

// ledger is the service's state and its HTTP handler. One mutex guards everything: checking a key,
// applying the payment and remembering the answer happen as one step, so two requests with the same
// key cannot both apply, and the later one simply waits for the earlier one's answer. Each step is a
// map lookup and an append, so holding the lock across it costs nothing worth a finer scheme.
type ledger struct {
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	entries []entry
	keys    map[string]*answer
	replays int
}

func newLedger(log *slog.Logger) *ledger {
	return &ledger{
		log:  log,
		now:  func() time.Time { return time.Now().UTC() },
		keys: make(map[string]*answer),
	}
}

// ServeHTTP routes by hand rather than with ServeMux patterns, because the mux answers a wrong
// method or path in plain text and every error here is JSON.
func (l *ledger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/payments":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, r, "POST")
			return
		}
		l.pay(w, r)
	case "/ledger":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, r, "GET, HEAD")
			return
		}
		l.list(w)
	case "/healthz":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, r, "GET, HEAD")
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such path %q: the paths are POST /payments, GET /ledger and GET /healthz", r.URL.Path))
	}
}

func (l *ledger) pay(w http.ResponseWriter, r *http.Request) {
	key, keyed, err := idempotencyKey(r.Header)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	p, status, err := readPayment(w, r)
	if err != nil {
		// A request that is refused before it is applied leaves its key unused, as at Stripe: a
		// client that fixes its request may retry with the same key.
		writeError(w, status, err.Error())
		return
	}

	l.mu.Lock()
	if keyed {
		if a, ok := l.keys[key]; ok {
			if a.eventID != p.EventID || a.amount != p.Amount {
				l.mu.Unlock()
				writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf(
					"Idempotency-Key %q was first used for event_id %q amount %d; this request is for event_id %q amount %d",
					key, a.eventID, a.amount, p.EventID, p.Amount))
				return
			}
			l.replays++
			l.mu.Unlock()
			l.log.Debug("replayed", "idempotency_key", key, "event_id", p.EventID, "source", p.Source)
			w.Header().Set(replayedHeader, "true")
			writeBody(w, a.status, a.body)
			return
		}
	}
	e := entry{
		Seq:            len(l.entries) + 1,
		EventID:        p.EventID,
		Amount:         p.Amount,
		Source:         p.Source,
		IdempotencyKey: key,
		At:             l.now(),
	}
	l.entries = append(l.entries, e)
	body := marshal(receipt{Seq: e.Seq, EventID: e.EventID, Applied: true})
	if keyed {
		l.keys[key] = &answer{status: http.StatusCreated, body: body, eventID: p.EventID, amount: p.Amount}
	}
	l.mu.Unlock()
	l.log.Debug("applied", "seq", e.Seq, "event_id", e.EventID, "amount", e.Amount, "source", e.Source, "idempotency_key", key)
	writeBody(w, http.StatusCreated, body)
}

func (l *ledger) list(w http.ResponseWriter) {
	l.mu.Lock()
	out := listing{Entries: slices.Clone(l.entries), Keys: len(l.keys), Replays: l.replays}
	l.mu.Unlock()
	if out.Entries == nil {
		out.Entries = []entry{} // an empty ledger is [], not null, so readers need no special case
	}
	writeBody(w, http.StatusOK, marshal(out))
}

// idempotencyKey returns the request's Idempotency-Key and whether it has one. A header that is
// present but empty, repeated or too long is an error rather than "no key": silently applying such
// a request every time would turn a client bug into duplicated payments.
func idempotencyKey(h http.Header) (key string, keyed bool, err error) {
	vals := h.Values("Idempotency-Key")
	switch {
	case len(vals) == 0:
		return "", false, nil
	case len(vals) > 1:
		return "", false, errors.New("more than one Idempotency-Key header")
	case vals[0] == "":
		return "", false, errors.New("Idempotency-Key header is empty")
	case len(vals[0]) > maxKeyLen:
		return "", false, fmt.Errorf("Idempotency-Key is longer than %d characters", maxKeyLen)
	}
	return vals[0], true, nil
}

// readPayment decodes and checks the body of POST /payments; on error it also returns the status
// to answer with.
func readPayment(w http.ResponseWriter, r *http.Request) (payment, int, error) {
	const shape = `a JSON object such as {"event_id": "e-1", "amount": 100, "source": "consumer-1"}`
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	// Unknown fields are refused so that a misspelt field ("eventId") is named as such.
	dec.DisallowUnknownFields()
	var p payment
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return p, http.StatusBadRequest, errors.New("request body is required: " + shape)
		}
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return p, http.StatusRequestEntityTooLarge, fmt.Errorf("request body is larger than %d bytes", maxBody)
		}
		return p, http.StatusBadRequest, fmt.Errorf("request body is not %s: %v", shape, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return p, http.StatusRequestEntityTooLarge, fmt.Errorf("request body is larger than %d bytes", maxBody)
		}
		return p, http.StatusBadRequest, errors.New("request body has more after its JSON object: send one payment per request")
	}
	if p.EventID == "" {
		return p, http.StatusBadRequest, errors.New("event_id is required and must not be empty")
	}
	return p, 0, nil
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s; use %s", r.Method, r.URL.Path, allow))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeBody(w, status, marshal(struct {
		Error string `json:"error"`
	}{msg}))
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// marshal encodes v with a trailing newline (friendly to curl). The values encoded here are plain
// structs of strings, numbers and times, which cannot fail to encode.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
