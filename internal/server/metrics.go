package server

import (
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/pool"
)

// metrics are the daemon's Prometheus metrics and the recent samples the
// dashboard charts.
type metrics struct {
	reg       *prometheus.Registry
	leaseWait *prometheus.HistogramVec
	reset     *prometheus.HistogramVec
	// deaths and lost count slot deaths and lost leases by reason.
	deaths *prometheus.CounterVec
	lost   *prometheus.CounterVec
	// refused counts the peers of the API over TCP refused, by reason
	// (peers.go).
	refused *prometheus.CounterVec
	recent  recent
}

var durationBuckets = []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .15, .2, .25, .35, .5, 1, 2.5, 5, 10}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.leaseWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pristine_lease_wait_seconds", Help: "Time from a lease request to a database handed out.", Buckets: durationBuckets,
	}, []string{"template"})
	m.reset = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pristine_reset_seconds", Help: "Time to reset a released slot: kill, clone again, start, ready.", Buckets: durationBuckets,
	}, []string{"template"})
	m.deaths = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pristine_slot_deaths_total", Help: "Slots whose server died (killed, out_of_memory, disk_full, exited) or whose reset failed (reset_failed), by reason; each was replaced.",
	}, []string{"template", "reason"})
	m.lost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pristine_leases_lost_total", Help: "Leases that ended without their holder releasing them (their slot died or was not restored after a restart), by reason.",
	}, []string{"template", "reason"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pristine_api_refused_total", Help: "Peers of the API over TCP refused, by reason: unauthorized (a request without the token, answered 401 and its connection closed), tls_handshake (a failed TLS handshake), connection_cap and address_cap (a connection over serve --max-connections or --max-connections-per-address, closed at once).",
	}, []string{"reason"})
	for _, r := range refusedReasons {
		m.refused.WithLabelValues(r)
	}
	m.reg.MustRegister(m.leaseWait, m.reset, m.deaths, m.lost, m.refused, &collector{s: s},
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// observe is the pools' Observe hook.
func (m *metrics) observe(template, kind string, d time.Duration) {
	if kind == "reset" {
		m.reset.WithLabelValues(template).Observe(d.Seconds())
	} else {
		m.leaseWait.WithLabelValues(template).Observe(d.Seconds())
	}
	m.recent.add(sample{At: time.Now(), Template: template, Kind: kind, MS: float64(d.Microseconds()) / 1000})
}

// event is the pools' Event hook: it counts slot deaths and lost leases.
func (m *metrics) event(ev pool.Event) {
	switch ev.Kind {
	case pool.EventSlotDied:
		m.deaths.WithLabelValues(ev.Template, ev.Reason).Inc()
	case pool.EventLeaseLost:
		m.lost.WithLabelValues(ev.Template, ev.Reason).Inc()
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// collector reports what is read at scrape time: slots by state, leases,
// template build times, memory and disk in use.
type collector struct{ s *Server }

var (
	descSlots  = prometheus.NewDesc("pristine_slots", "Slots by template and state.", []string{"template", "state"}, nil)
	descLeased = prometheus.NewDesc("pristine_leases", "Leases held now.", []string{"template"}, nil)
	descLeases = prometheus.NewDesc("pristine_leases_total", "Leases handed out.", []string{"template"}, nil)
	descReused = prometheus.NewDesc("pristine_leases_reused_total", "Leases released unchanged and handed out again without a reset.", []string{"template"}, nil)
	descReclm  = prometheus.NewDesc("pristine_leases_reclaimed_total", "Leases reclaimed because they expired or their holder exited.", []string{"template", "reason"}, nil)
	descRepl   = prometheus.NewDesc("pristine_slots_replaced_total", "Slots whose server died and was replaced.", []string{"template"}, nil)
	descGrown  = prometheus.NewDesc("pristine_slots_grown_total", "Slots a pool grew by because a client needed more (lease min_size, or pool up of a larger size).", []string{"template"}, nil)
	descSpares = prometheus.NewDesc("pristine_slots_grown_for_waits_total", "Slots a pool grew by itself because lease requests waited behind resets (serve --max-spares); counted in pristine_slots_grown_total too.", []string{"template"}, nil)
	descShrunk = prometheus.NewDesc("pristine_slots_shrunk_idle_total", "Grown slots retired after the daemon's --shrink-after idle.", []string{"template"}, nil)
	descIllegl = prometheus.NewDesc("pristine_slot_illegal_moves_total", "Slot moves the state machine refused: a bug in pristine (each is logged with the slot and the move); 0 in a healthy daemon.", []string{"template"}, nil)
	descBase   = prometheus.NewDesc("pristine_pool_base_size", "The size a pool was brought up with, which idle shrinking keeps.", []string{"template"}, nil)
	descBuild  = prometheus.NewDesc("pristine_template_build_seconds", "How long the template took to build.", []string{"template", "hash"}, nil)
	descTBytes = prometheus.NewDesc("pristine_template_bytes", "Disk space of the template's data directory.", []string{"template", "hash"}, nil)
	descMem    = prometheus.NewDesc("pristine_memory_bytes", "Resident memory of every slot's server.", nil, nil)
	descDisk   = prometheus.NewDesc("pristine_disk_used_bytes", "Space used on the filesystem of the root's data.", nil, nil)
	descDiskF  = prometheus.NewDesc("pristine_disk_free_bytes", "Space free on the filesystem of the root's data.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSlots, descLeased, descLeases, descReused, descReclm, descRepl, descGrown, descSpares, descShrunk, descIllegl, descBase, descBuild, descTBytes, descMem, descDisk, descDiskF} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	var rss int64
	for _, name := range c.s.poolNames() {
		p, err := c.s.pool(name)
		if err != nil {
			continue
		}
		st := p.Status(true)
		for _, state := range []pool.State{pool.Starting, pool.Ready, pool.Leased, pool.Resetting, pool.Kept, pool.Failed, pool.Retired} {
			ch <- prometheus.MustNewConstMetric(descSlots, prometheus.GaugeValue, float64(st.States[state]), name, string(state))
		}
		ch <- prometheus.MustNewConstMetric(descLeased, prometheus.GaugeValue, float64(st.Leased), name)
		ch <- prometheus.MustNewConstMetric(descLeases, prometheus.CounterValue, float64(st.Stats.Leases), name)
		ch <- prometheus.MustNewConstMetric(descReused, prometheus.CounterValue, float64(st.Stats.Reused), name)
		ch <- prometheus.MustNewConstMetric(descReclm, prometheus.CounterValue, float64(st.Stats.Expired), name, "expired")
		ch <- prometheus.MustNewConstMetric(descReclm, prometheus.CounterValue, float64(st.Stats.HolderGone), name, "holder_gone")
		ch <- prometheus.MustNewConstMetric(descRepl, prometheus.CounterValue, float64(st.Stats.Replaced), name)
		ch <- prometheus.MustNewConstMetric(descGrown, prometheus.CounterValue, float64(st.Stats.Grown), name)
		ch <- prometheus.MustNewConstMetric(descSpares, prometheus.CounterValue, float64(st.Stats.GrownForWaits), name)
		ch <- prometheus.MustNewConstMetric(descShrunk, prometheus.CounterValue, float64(st.Stats.ShrunkIdle), name)
		ch <- prometheus.MustNewConstMetric(descIllegl, prometheus.CounterValue, float64(st.Stats.IllegalMoves), name)
		ch <- prometheus.MustNewConstMetric(descBase, prometheus.GaugeValue, float64(st.Base), name)
		for _, sl := range st.Slots {
			if sl.PID > 0 {
				rss += ProcRSS(sl.PID)
			}
		}
	}
	if all, err := c.s.cat.List(); err == nil {
		for _, m := range all {
			ch <- prometheus.MustNewConstMetric(descBuild, prometheus.GaugeValue, m.BuildSeconds, m.Name, m.Hash[:12])
			ch <- prometheus.MustNewConstMetric(descTBytes, prometheus.GaugeValue, float64(m.Bytes), m.Name, m.Hash[:12])
		}
	}
	ch <- prometheus.MustNewConstMetric(descMem, prometheus.GaugeValue, float64(rss))
	var fs unix.Statfs_t
	if unix.Statfs(c.s.root.Data(), &fs) == nil {
		ch <- prometheus.MustNewConstMetric(descDisk, prometheus.GaugeValue, float64((fs.Blocks-fs.Bfree)*uint64(fs.Bsize)))
		ch <- prometheus.MustNewConstMetric(descDiskF, prometheus.GaugeValue, float64(fs.Bavail*uint64(fs.Bsize)))
	}
}

// ProcRSS is a process's resident memory in bytes, from /proc.
func ProcRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// sample is one lease wait or reset, for the dashboard's charts.
type sample struct {
	At       time.Time `json:"t"`
	Template string    `json:"template"`
	Kind     string    `json:"kind"`
	MS       float64   `json:"ms"`
}

// recent keeps the samples of the last minutes, bounded in number.
type recent struct {
	mu  sync.Mutex
	buf []sample
}

const (
	recentWindow = 10 * time.Minute
	recentMax    = 50000
)

func (r *recent) add(s sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, s)
	if len(r.buf) > recentMax {
		r.buf = append(r.buf[:0], r.buf[len(r.buf)-recentMax/2:]...)
	}
}

// Bucket is one second of samples of one kind.
type Bucket struct {
	T     int64   `json:"t"` // unix seconds
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// series returns per-second buckets of the last window, per kind.
func (r *recent) series(window time.Duration) map[string][]Bucket {
	r.mu.Lock()
	cut := time.Now().Add(-recentWindow)
	i := 0
	for i < len(r.buf) && r.buf[i].At.Before(cut) {
		i++
	}
	r.buf = r.buf[i:]
	since := time.Now().Add(-window)
	bySec := map[string]map[int64][]float64{"lease_wait": {}, "reset": {}}
	for _, s := range r.buf {
		if s.At.Before(since) {
			continue
		}
		sec := s.At.Unix()
		bySec[s.Kind][sec] = append(bySec[s.Kind][sec], s.MS)
	}
	r.mu.Unlock()
	out := map[string][]Bucket{}
	for kind, secs := range bySec {
		b := []Bucket{}
		for t, v := range secs {
			sort.Float64s(v)
			b = append(b, Bucket{T: t, Count: len(v), P50: v[len(v)/2], P99: v[(len(v)*99)/100], Max: v[len(v)-1]})
		}
		sort.Slice(b, func(i, j int) bool { return b[i].T < b[j].T })
		out[kind] = b
	}
	return out
}
