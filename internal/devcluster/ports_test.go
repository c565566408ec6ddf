package devcluster

import (
	"fmt"
	"net"
	"testing"
)

// TestFreePortsOutsideEphemeralRange: the ports are distinct, bindable,
// and below the range the kernel takes outgoing source ports from.
func TestFreePortsOutsideEphemeralRange(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	low := ephemeralLow()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d returned twice in %v", p, ports)
		}
		seen[p] = true
		if low > 11000 && p >= low {
			t.Errorf("port %d is in the ephemeral range starting at %d", p, low)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		ln.Close()
	}
}
