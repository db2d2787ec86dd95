package server

import (
	"crypto/rand"
	"sync"
	"time"
)

// A one-time login opens the dashboard in a browser without putting the
// token in a URL, a terminal's scrollback or a log: `pristine serve
// --listen` prints http://ADDR/?login=CODE, and the first request with the
// code gets the token's cookie; the code then stops working, and it expires
// unused after LoginTTL.

// LoginTTL is how long a one-time login code stays valid unused.
const LoginTTL = 10 * time.Minute

type logins struct {
	mu    sync.Mutex
	codes map[string]time.Time // code -> expiry
}

// NewLogin returns a one-time login code for the dashboard on TCP.
func (s *Server) NewLogin() string {
	code := rand.Text()
	s.logins.mu.Lock()
	defer s.logins.mu.Unlock()
	if s.logins.codes == nil {
		s.logins.codes = map[string]time.Time{}
	}
	s.logins.codes[code] = time.Now().Add(LoginTTL)
	return code
}

// useLogin spends a one-time login code, reporting whether it was valid.
func (s *Server) useLogin(code string) bool {
	s.logins.mu.Lock()
	defer s.logins.mu.Unlock()
	exp, ok := s.logins.codes[code]
	delete(s.logins.codes, code)
	return ok && time.Now().Before(exp)
}
