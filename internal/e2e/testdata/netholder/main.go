// Command netholder is the runner process of the network-namespace test
// (internal/e2e/netns_test.go): it leases a database from the daemon
// PRISTINE_URL names, with a TTL of its first argument, renews the lease
// while it lives (client.Heartbeat), prints the lease's id and waits to
// be killed.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
)

func main() {
	ttl, err := time.ParseDuration(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage: netholder TTL")
		os.Exit(2)
	}
	c, err := client.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx := context.Background()
	l, err := c.Lease(ctx, api.LeaseRequest{Holder: "netholder", TTL: ttl.Seconds(), Wait: 30, PID: os.Getpid()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(l.ID)
	c.Heartbeat(ctx, l.ID, ttl, func(err error) { fmt.Fprintln(os.Stderr, "renew:", err) })
}
