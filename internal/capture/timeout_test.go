package capture_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// silentListener accepts connections on 127.0.0.1 and never writes; each
// accepted connection is sent on the channel.
func silentListener(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	return ln.Addr().String(), conns
}

// TestSilentSourceTimesOut: a source that accepts TCP and never greets
// fails within the connect timeout, naming its address and the timeout,
// and pristine closes the connection it opened.
func TestSilentSourceTimesOut(t *testing.T) {
	addr, conns := silentListener(t)
	cfg, err := dsn.Parse("mysql://capture@" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 500 * time.Millisecond
	_, err = capture.Open(context.Background(), cfg, nil)
	if err == nil {
		t.Fatal("Open of a silent source succeeded")
	}
	if !errors.Is(err, capture.ErrTimeout) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "500ms") ||
		!strings.Contains(err.Error(), "--source-timeout") {
		t.Fatalf("want a timeout naming %s and 500ms, got: %v", addr, err)
	}
	// The connection pristine opened is closed: a read on the server side
	// ends (EOF or reset) instead of blocking.
	c := <-conns
	if _, err := io.Copy(io.Discard, c); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("server side of a timed-out connection: %v", err)
	}
	c.Close()
}

// TestSourceTimeoutDefaults: an open source carries the default
// timeouts, and a read that outlasts the read timeout fails as a timeout.
func TestSourceTimeoutDefaults(t *testing.T) {
	in := mariadbtest.Start(t)
	execAll(t, mariadbtest.Open(t, in, ""), "CREATE DATABASE app")
	cfg, err := dsn.Parse(sourceURL(in, "root", ""))
	if err != nil {
		t.Fatal(err)
	}
	src, err := capture.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Config.Timeout != capture.DefaultConnectTimeout || src.Config.ReadTimeout != capture.DefaultIOTimeout || src.Config.WriteTimeout != capture.DefaultIOTimeout {
		t.Fatalf("timeouts %v/%v/%v, want the defaults", src.Config.Timeout, src.Config.ReadTimeout, src.Config.WriteTimeout)
	}
	// Long enough that Open's own queries answer in time on a loaded
	// machine (300 ms did not, once, beside the rest of CI).
	cfg.ReadTimeout = 1500 * time.Millisecond
	short, err := capture.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	var v int
	err = short.ExplainTimeout(short.DB.QueryRow("SELECT SLEEP(10)").Scan(&v))
	if !errors.Is(err, capture.ErrTimeout) || !strings.Contains(err.Error(), "1.5s") || !strings.Contains(err.Error(), "--source-io-timeout") {
		t.Fatalf("a 10 s query under a 1.5 s read timeout: %v", err)
	}
}
