package cli

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/server"
)

func newDashboardCmd(g *Globals) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "dashboard [--listen 127.0.0.1:0]",
		Short: "open the live dashboard of the running daemon in a browser (prints a one-time URL)",
		Long: `dashboard serves the running daemon's dashboard and API on loopback TCP, for a
browser, and prints a URL with a one-time login: the first browser that opens it gets
a session cookie, and the URL stops working. It runs until Ctrl-C. The daemon that
"pool up" started needs nothing else; "pristine serve --listen" prints its own URL.`,
		Example: `  pristine dashboard                          # prints http://127.0.0.1:PORT/?login=...
  pristine dashboard --listen 127.0.0.1:7879`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return RunDashboard(cmd.Context(), g, listen, func(u string) {
				fmt.Fprintln(g.IO.Out, u)
				g.stderrf("pristine dashboard: open the URL above (one-time login); Ctrl-C stops the dashboard, not the daemon")
			})
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback address to serve the dashboard on (port 0: any free port)")
	return cmd
}

// RunDashboard serves the dashboard of the root's running daemon on
// loopback TCP until ctx ends, calling ready with the one-time URL once it
// listens.
func RunDashboard(ctx context.Context, g *Globals, listen string, ready func(url string)) error {
	_, root, err := g.daemon(ctx, false)
	if err != nil {
		return err
	}
	sock := api.SocketPath(root.Path)
	ln, err := server.ListenTCP(listen, false)
	if err != nil {
		return err
	}
	defer ln.Close()
	d := &dashboardProxy{login: rand.Text(), session: rand.Text()}
	d.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: "pristine"})
			r.Out.Header.Del("Cookie")
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}},
		FlushInterval: -1, // the dashboard's live stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, fmt.Sprintf("the pristine daemon on %s does not answer (%v): is a pool up?", sock, err), http.StatusBadGateway)
		},
	}
	hs := &http.Server{Handler: d, ReadHeaderTimeout: server.DefaultTimeouts.Header, IdleTimeout: server.DefaultTimeouts.Idle}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	ready(fmt.Sprintf("http://%s/?login=%s", ln.Addr(), d.login))
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(shut)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("dashboard: %w", err)
	}
}

// dashboardProxy lets through the browser that spent the one-time login
// (it holds the session cookie) and proxies it to the daemon's socket.
type dashboardProxy struct {
	mu      sync.Mutex
	login   string // spent: ""
	session string
	proxy   *httputil.ReverseProxy
}

const dashboardCookie = "pristine_dashboard"

func (d *dashboardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if code := r.URL.Query().Get("login"); r.URL.Path == "/" && code != "" {
		d.mu.Lock()
		ok := d.login != "" && subtle.ConstantTimeCompare([]byte(code), []byte(d.login)) == 1
		if ok {
			d.login = ""
		}
		d.mu.Unlock()
		if ok {
			http.SetCookie(w, &http.Cookie{Name: dashboardCookie, Value: d.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
	}
	if c, err := r.Cookie(dashboardCookie); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(d.session)) == 1 {
		d.proxy.ServeHTTP(w, r)
		return
	}
	http.Error(w, "not logged in: the one-time URL that `pristine dashboard` printed was used already; run it again for a new one", http.StatusUnauthorized)
}
