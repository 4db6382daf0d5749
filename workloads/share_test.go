package workloads

import (
	"strings"
	"testing"
	"time"
)

func TestShareGroupConfigResolved(t *testing.T) {
	c, err := ShareGroupConfig{Topics: []string{"q"}}.resolved()
	if err != nil {
		t.Fatal(err)
	}
	if c.Group != "verity-share" || c.Members != 3 || c.Mix != (ShareMix{80, 15, 5}) || c.DrainIdle != 50*time.Second {
		t.Errorf("defaults: %+v", c)
	}
	c, err = ShareGroupConfig{Topics: []string{"q"}, LockDuration: 15 * time.Second, SessionTimeout: 10 * time.Second}.resolved()
	if err != nil || c.DrainIdle != 20*time.Second {
		t.Errorf("drain idle %s (%v), want the lock and 5 s when the session timeout is shorter", c.DrainIdle, err)
	}
	for _, tc := range []struct {
		cfg  ShareGroupConfig
		want string
	}{
		{ShareGroupConfig{}, "no topics"},
		{ShareGroupConfig{Topics: []string{"q"}, Members: -1}, "members -1"},
		{ShareGroupConfig{Topics: []string{"q"}, Mix: ShareMix{Accept: -1, Release: 2}}, "weights are 0 or more"},
		{ShareGroupConfig{Topics: []string{"q"}, LockDuration: time.Millisecond}, "1s or more"},
		{ShareGroupConfig{Topics: []string{"q"}, DeliveryLimit: 11}, "2 to 10"},
	} {
		if _, err := tc.cfg.resolved(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.cfg, err, tc.want)
		}
	}
}

// The header states what the group ran with: its own settings, else the brokers', else Kafka's.
func TestShareGroupHeader(t *testing.T) {
	c, _ := ShareGroupConfig{Topics: []string{"q"}}.resolved()
	if h := c.header(nil); h.LockMS != 30_000 || h.DeliveryLimit != 5 {
		t.Errorf("Kafka's defaults: %+v", h)
	}
	broker := map[string]string{"group.share.record.lock.duration.ms": "20000", "group.share.delivery.count.limit": "3"}
	if h := c.header(broker); h.LockMS != 20_000 || h.DeliveryLimit != 3 {
		t.Errorf("the brokers' settings: %+v", h)
	}
	c.LockDuration, c.DeliveryLimit = 15*time.Second, 4
	if h := c.header(broker); h.LockMS != 15_000 || h.DeliveryLimit != 4 {
		t.Errorf("the group's own settings: %+v", h)
	}
}
