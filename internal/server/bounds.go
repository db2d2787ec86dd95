package server

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// Bounds of the durations a client may ask for. A lease lives at most
// MaxTTL without an extension (a forgotten lease is reclaimed within a
// week); a request waits at most MaxWait for a free database.
const (
	DefaultTTL  = api.DefaultTTL
	MaxTTL      = api.MaxTTL
	DefaultWait = api.DefaultWait
	MaxWait     = api.MaxWait
	// DefaultMaxWaiters caps the lease requests in progress at once, each
	// an open connection and a goroutine (`serve --max-waiters`), unless a
	// quarter of the open-file limit is lower.
	DefaultMaxWaiters = 1024
)

// duration turns a field in seconds into a duration: 0 means def (with def
// 0, 0 is refused); NaN, infinities, negative values and values above max
// are refused with an error giving the allowed range.
func duration(field string, v float64, def, max time.Duration) (time.Duration, error) {
	if v == 0 && def > 0 {
		return def, nil
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > max.Seconds() {
		allowed := fmt.Sprintf("from 0 to %.0f seconds (%s); 0 or absent means %s", max.Seconds(), human(max), human(def))
		if def == 0 {
			allowed = fmt.Sprintf("more than 0 and at most %.0f seconds (%s)", max.Seconds(), human(max))
		}
		return 0, fmt.Errorf("%w: %s is %s: it must be %s", errBadRequest, field, strconv.FormatFloat(v, 'g', -1, 64), allowed)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// human says a whole number of days, hours or minutes in words.
func human(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if d >= u.d && d%u.d == 0 {
			n := int(d / u.d)
			if n == 1 {
				return "1 " + u.name
			}
			return strconv.Itoa(n) + " " + u.name + "s"
		}
	}
	return d.String()
}

// maxWaiters is the waiter cap in force: MaxWaiters, or by default
// DefaultMaxWaiters unless a quarter of the open-file limit is lower (each
// waiter holds a connection; the slots' servers need files too).
func (s *Server) maxWaiters() int64 {
	if s.MaxWaiters > 0 {
		return int64(s.MaxWaiters)
	}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur/4 < DefaultMaxWaiters {
		return int64(max(lim.Cur/4, 16))
	}
	return DefaultMaxWaiters
}

// enterWaiter admits one more lease request, or answers 429 with
// Retry-After when MaxWaiters are in progress already. The caller calls
// the returned function when its request ends.
func (s *Server) enterWaiter(w http.ResponseWriter) (leave func(), ok bool) {
	if n := s.waiters.Add(1); n > s.maxWaiters() {
		s.waiters.Add(-1)
		s.rejected.Add(1)
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusTooManyRequests, ErrorBody{Error: fmt.Sprintf(
			"too many lease requests in progress (%d, the daemon's --max-waiters): retry after 1 second, "+
				"make the pool larger, or start the daemon with a higher `pristine serve --max-waiters`", s.maxWaiters())})
		return nil, false
	}
	return func() { s.waiters.Add(-1) }, true
}

// waiterMetrics report the lease requests in progress and those refused.
func (s *Server) waiterMetrics() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pristine_lease_waiters", Help: "Lease requests in progress (waiting for a database or being served)."},
			func() float64 { return float64(s.waiters.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "pristine_lease_waiters_rejected_total", Help: "Lease requests answered 429 because --max-waiters were in progress."},
			func() float64 { return float64(s.rejected.Load()) }),
	}
}
