package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Compound is several faults at once: injected in order (each resolves its targets after the
// ones before took effect: "kill the leader, then isolate the new one"), healed in reverse
// order. Each part records its own events, so the history shows the concrete faults, and a
// disk loss inside a compound still counts as one.
type Compound []Fault

// Both is the compound of two faults.
func Both(a, b Fault) Compound { return Compound{a, b} }

func (f Compound) Name() string { return "compound" }
func (f Compound) String() string {
	parts := make([]string, len(f))
	for i, p := range f {
		parts[i] = p.String()
	}
	return "compound(" + strings.Join(parts, " + ") + ")"
}
func (f Compound) Available(c Cluster) error {
	if len(f) == 0 {
		return errors.New("a compound fault needs parts")
	}
	var errs []error
	for _, p := range f {
		if err := p.Available(c); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

type compoundState struct{ states []any }

func (f Compound) Inject(ctx context.Context, e *Env) (any, error) {
	s := &compoundState{}
	for _, p := range f {
		st, err := p.Inject(ctx, e)
		s.states = append(s.states, st)
		if err != nil {
			return s, err
		}
	}
	if e.inj != nil {
		// In place once the last part is.
		e.inj.InPlace = time.Now()
	}
	return s, nil
}

func (f Compound) Heal(ctx context.Context, e *Env, state any) error {
	s, _ := state.(*compoundState)
	if s == nil {
		return nil
	}
	var errs []error
	for i := len(s.states) - 1; i >= 0; i-- {
		if s.states[i] == nil {
			continue
		}
		errs = append(errs, f[i].Heal(ctx, e, s.states[i]))
	}
	return errors.Join(errs...)
}

// None is no fault: a control run, or a quiet slot in a schedule. It records nothing.
type None struct{}

func (None) Name() string                              { return "none" }
func (None) String() string                            { return "none" }
func (None) Available(Cluster) error                   { return nil }
func (None) Inject(context.Context, *Env) (any, error) { return nil, nil }
func (None) Heal(context.Context, *Env, any) error     { return nil }
