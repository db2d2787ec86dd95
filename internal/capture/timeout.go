package capture

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Timeouts toward a source, unless the configuration sets its own:
// connecting (TCP and the server's greeting and authentication) and each
// read or write once connected. A source that accepts a connection and
// then says nothing fails within DefaultConnectTimeout instead of hanging.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultIOTimeout      = 10 * time.Minute
)

// ErrTimeout is wrapped by errors about a source that did not answer in time.
var ErrTimeout = errors.New("the source did not answer in time")

// withTimeouts returns a copy of cfg with the default timeouts where cfg
// has none.
func withTimeouts(cfg *mysql.Config) *mysql.Config {
	c := cfg.Clone()
	if c.Timeout <= 0 {
		c.Timeout = DefaultConnectTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultIOTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultIOTimeout
	}
	return c
}

// connector opens connections to the source cfg names: go-sql-driver's
// Timeout bounds only the TCP dial, so the whole connection (the server's
// greeting, authentication) runs under cfg.Timeout too, and a source that
// stays silent fails with an error naming it and the timeout. Reads and
// writes that hit cfg's ReadTimeout or WriteTimeout are counted in
// timeouts: the driver reports them only as "invalid connection".
func connector(cfg *mysql.Config, timeouts *atomic.Int64) (driver.Connector, error) {
	cfg = cfg.Clone()
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{KeepAlive: 15 * time.Second}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, timeouts: timeouts}, nil
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return &timedConnector{Connector: c, cfg: cfg}, nil
}

type timedConnector struct {
	driver.Connector
	cfg *mysql.Config
}

func (t *timedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	conn, err := t.Connector.Connect(cctx)
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		return nil, fmt.Errorf("%w: %s accepted no complete connection within %s (the connect timeout): "+
			"check that it is a MariaDB or MySQL server and that it is not overloaded, or raise --source-timeout",
			ErrTimeout, where(t.cfg), t.cfg.Timeout)
	}
	return conn, err
}

// watchedConn counts reads and writes that end in a timeout.
type watchedConn struct {
	net.Conn
	timeouts *atomic.Int64
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.count(err)
	return n, err
}

func (c *watchedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.count(err)
	return n, err
}

func (c *watchedConn) count(err error) {
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		c.timeouts.Add(1)
	}
}

// where names the source's address for messages: host:port or the socket.
func where(cfg *mysql.Config) string {
	if cfg.Net == "unix" {
		return "the socket " + cfg.Addr
	}
	return cfg.Addr
}

// explainTimeout says so when err comes from a source connection that
// timed out (the driver reports that as a bare "invalid connection").
func (s *Source) explainTimeout(err error) error {
	if err == nil || errors.Is(err, ErrTimeout) || s.timeouts.Load() == 0 {
		return err
	}
	var ne net.Error
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: %s sent nothing for %s (the read/write timeout): raise --source-io-timeout if it is only slow: %v",
			ErrTimeout, where(s.Config), s.Config.ReadTimeout, err)
	}
	return err
}
