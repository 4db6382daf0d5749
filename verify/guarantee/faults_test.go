package guarantee

import "testing"

func TestFaultKind(t *testing.T) {
	for in, want := range map[string]string{"wipe": FaultDiskLoss, "Disk_Loss": FaultDiskLoss, "unclean_election": FaultUncleanElection, "kill": "kill"} {
		if got := FaultKind(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
