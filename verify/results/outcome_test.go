package results

import "testing"

func TestWorstOutcome(t *testing.T) {
	for _, tc := range []struct {
		in   []Outcome
		want Outcome
	}{
		{nil, OutcomePass},
		{[]Outcome{OutcomePass, OutcomePass}, OutcomePass},
		{[]Outcome{OutcomePass, OutcomeUnknown}, OutcomeUnknown},
		{[]Outcome{OutcomeUnknown, OutcomeLivenessFail, OutcomePass}, OutcomeLivenessFail},
		{[]Outcome{OutcomeLivenessFail, OutcomeFail, OutcomeUnknown}, OutcomeFail},
		{[]Outcome{"garbled", OutcomePass}, OutcomeUnknown},
	} {
		if got := WorstOutcome(tc.in...); got != tc.want {
			t.Errorf("WorstOutcome(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    Verdict
		l    LivenessVerdict
		want Outcome
	}{
		{Pass, "", OutcomePass},
		{Pass, LivenessNotStated, OutcomePass},
		{Pass, LivenessFail, OutcomeLivenessFail},
		{Pass, LivenessUnknown, OutcomeUnknown},
		{Fail, LivenessFail, OutcomeFail},
		{Unknown, LivenessFail, OutcomeUnknown},
		{"", "", OutcomeUnknown},
	} {
		if got := OutcomeOf(tc.v, tc.l); got != tc.want {
			t.Errorf("OutcomeOf(%s, %s) = %s, want %s", tc.v, tc.l, got, tc.want)
		}
	}
}
