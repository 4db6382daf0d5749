package harness_test

import (
	"testing"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
)

func TestSmoke(t *testing.T) {
	c := harnesstest.Start(t, harness.Spec{})
	ps, err := c.Describe(t.Context(), "__verity_probe")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", ps)
}
