// Command kfakeserver serves franz-go's in-memory kfake cluster (one broker)
// until SIGTERM or SIGINT, as the reference point of bench/run.sh.
// It prints "kfake listening on HOST:PORT" once it accepts connections.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port to listen on 127.0.0.1 (0: pick a free one)")
	flag.Parse()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(*port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfakeserver: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("kfake listening on %s\n", c.ListenAddrs()[0])
	<-sig
	c.Close()
}
