package mariadb

// SetFreePort replaces how Start picks a port for Config.Port 0 until the
// returned function restores it.
func SetFreePort(f func(addr string) (int, error)) (restore func()) {
	old := freePort
	freePort = f
	return func() { freePort = old }
}

// StartNoSync starts cmd as Start starts a server: its fsyncs do nothing.
var StartNoSync = startNoSync
