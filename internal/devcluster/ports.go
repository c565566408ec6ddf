package devcluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
)

// FreePorts returns n distinct loopback ports that nothing listens on
// right now, for a process started later to bind. A port the kernel hands
// out for "127.0.0.1:0" comes from the ephemeral range, the same range it
// takes source ports of outgoing connections from, so between our check
// and the child's bind any client connection on the machine may take it
// (tests saw "bind: address already in use"). Ports below that range are
// only ever taken by an explicit bind, so FreePorts picks them there.
func FreePorts(n int) ([]int, error) {
	low := ephemeralLow()
	const floor = 10000
	if low-floor < 1000 {
		return kernelPorts(n)
	}
	seen := make(map[int]bool, n)
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("no free loopback port in %d-%d", floor, low-1)
		}
		p := floor + rand.IntN(low-floor)
		if seen[p] {
			continue
		}
		seen[p] = true
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		ports = append(ports, p)
	}
	return ports, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil {
		return 0
	}
	return low
}

// kernelPorts asks the kernel for n ports, bound together so they differ.
func kernelPorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
