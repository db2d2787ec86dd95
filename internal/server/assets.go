package server

import (
	_ "embed"
	"net/http"
)

//go:embed dashboard.html
var dashboardHTML []byte

// openapiSpec is the API's OpenAPI document, served at /v1/openapi.yaml.
//
//go:embed openapi.yaml
var openapiSpec []byte

// dashboardHandler serves the live dashboard: every slot coloured by state,
// and charts of lease wait and reset time over the last minutes.
func dashboardHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'")
		w.Write(dashboardHTML)
	})
}
