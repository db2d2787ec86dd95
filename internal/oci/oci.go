// Package oci ships templates through OCI registries (GitHub, GitLab, ECR,
// Harbor, distribution): a template is an artifact of its own type whose
// layers are consecutive chunks of one pristine archive, uploaded and
// downloaded in parallel. It also builds a template once per fleet, with a
// lease kept in the registry (cache.go, lock.go).
//
// All registry traffic goes through oras-go; credentials come from the
// standard Docker sources (config.json and its credential helpers) or from
// PRISTINE_REGISTRY_* environment variables.
package oci

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// Media types and annotations of a template artifact.
const (
	// ArtifactType marks a manifest as a pristine template.
	ArtifactType = "application/vnd.pristinedb.template.v1"
	// ConfigMediaType is the config blob: the template's public metadata
	// (no password).
	ConfigMediaType = "application/vnd.pristinedb.template.config.v1+json"
	// ChunkMediaType is one layer: a byte range of a pristine archive
	// (docs/archive-format.md); the layers, concatenated in order, are the
	// archive.
	ChunkMediaType = "application/vnd.pristinedb.template.archive.chunk.v1"
	// LockArtifactType marks the lease manifest of `template build --cache`.
	LockArtifactType = "application/vnd.pristinedb.template.lock.v1"

	AnnotationName        = "org.pristinedb.template.name"
	AnnotationHash        = "org.pristinedb.template.hash" // the content key the store files it under
	AnnotationKey         = "org.pristinedb.template.key"  // a client's own content key, when it has one
	AnnotationServer      = "org.pristinedb.template.server"
	AnnotationFlavor      = "org.pristinedb.template.flavor"
	AnnotationProfile     = "org.pristinedb.template.profile"
	AnnotationArchiveSize = "org.pristinedb.archive.size"
	AnnotationCompressed  = "org.pristinedb.archive.compressed"
	AnnotationChunkOffset = "org.pristinedb.archive.offset"
)

// Environment variables read for credentials, before the Docker sources.
const (
	EnvUsername = "PRISTINE_REGISTRY_USERNAME"
	EnvPassword = "PRISTINE_REGISTRY_PASSWORD" // a password or a personal access token
	EnvToken    = "PRISTINE_REGISTRY_TOKEN"    // a registry bearer token, used as is
)

// Remote says how to reach a registry.
type Remote struct {
	// PlainHTTP talks HTTP instead of HTTPS (a registry on loopback).
	PlainHTTP bool
	// CAFile is a PEM file of certificate authorities to trust besides the
	// system's (a self-hosted registry with its own certificate).
	CAFile string
	// Parallel is the number of chunks moved at once (default 4).
	Parallel int
	// Log receives progress lines; nil means quiet.
	Log func(format string, args ...any)
}

func (o *Remote) parallel() int {
	if o.Parallel <= 0 {
		return 4
	}
	return o.Parallel
}

func (o *Remote) logf(format string, args ...any) {
	if o.Log != nil {
		o.Log(format, args...)
	}
}

// Ref is a parsed reference: registry/repository[:tag|@digest].
type Ref struct {
	registry.Reference
}

// ParseRef parses a reference; the tag or digest may be missing.
func ParseRef(s string) (Ref, error) {
	s = strings.TrimPrefix(s, "oci://")
	r, err := registry.ParseReference(s)
	if err != nil {
		return Ref{}, fmt.Errorf("registry reference %q: %w: write it as HOST[:PORT]/REPOSITORY[:TAG], e.g. ghcr.io/acme/templates", s, err)
	}
	return Ref{r}, nil
}

// WithTag returns the reference with tag set.
func (r Ref) WithTag(tag string) Ref {
	r.Reference.Reference = tag
	return r
}

// Repo returns the reference without tag or digest.
func (r Ref) Repo() string { return r.Registry + "/" + r.Repository }

var tagRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// ContentTag is the tag a template is cached under: its name and the first
// 32 hex digits (128 bits) of its content hash, which covers the inputs,
// the server version and the profile.
func ContentTag(name, hash string) string {
	if len(hash) > 32 {
		hash = hash[:32]
	}
	return name + "-" + hash
}

// lockTag is the tag of the lease manifest beside a content tag.
func lockTag(contentTag string) string { return contentTag + ".lock" }

// repository opens a client for ref's repository.
func (o *Remote) repository(ref Ref) (*remote.Repository, error) {
	repo, err := remote.NewRepository(ref.Repo())
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", ref.Repo(), err)
	}
	repo.PlainHTTP = o.PlainHTTP
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = o.parallel() + 2
	tr.DisableCompression = true // blobs are binary; gzip would cost CPU both ways
	// One TCP connection per chunk in flight: HTTP/2 would multiplex the
	// parallel chunks over one connection and one congestion window.
	tr.ForceAttemptHTTP2 = false
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("registry CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("registry CA file %s holds no PEM certificate", o.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	client := &auth.Client{
		Client:     &http.Client{Transport: tr},
		Cache:      auth.NewCache(),
		Credential: credentialFunc(),
	}
	client.SetUserAgent("pristine")
	repo.Client = client
	return repo, nil
}

// credentialFunc returns credentials from the environment when set, else
// from Docker's config.json and its credential helpers (what `docker login`
// wrote).
func credentialFunc() auth.CredentialFunc {
	if tok := os.Getenv(EnvToken); tok != "" {
		return auth.StaticCredential("*", auth.Credential{AccessToken: tok})
	}
	if user, pass := os.Getenv(EnvUsername), os.Getenv(EnvPassword); user != "" || pass != "" {
		cred := auth.Credential{Username: user, Password: pass}
		return func(context.Context, string) (auth.Credential, error) { return cred, nil }
	}
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return func(context.Context, string) (auth.Credential, error) {
			return auth.EmptyCredential, fmt.Errorf("read docker credentials: %w", err)
		}
	}
	return credentials.Credential(store)
}

// ErrAuth is returned (wrapped) when the registry refused the credentials.
var ErrAuth = errors.New("the registry refused the credentials")

// ErrDigest is returned (wrapped) when a blob's bytes do not match its digest.
var ErrDigest = errors.New("digest mismatch")

// explain wraps a registry error with its likely cause and fix.
func explain(op string, ref Ref, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return fmt.Errorf("%s %s: %w (no credentials for %s): run `docker login %s`, or set %s and %s (or %s)",
			op, ref.Repo(), ErrAuth, ref.Registry, ref.Registry, EnvUsername, EnvPassword, EnvToken)
	}
	var ec *errcode.ErrorResponse
	if errors.As(err, &ec) {
		switch ec.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("%s %s: %w (401): run `docker login %s`, or set %s and %s (or %s): %v",
				op, ref.Repo(), ErrAuth, ref.Registry, EnvUsername, EnvPassword, EnvToken, err)
		case http.StatusForbidden:
			return fmt.Errorf("%s %s: %w (403: these credentials may not use this repository): pushing needs a token with write access (GitHub: write:packages; GitLab: write_registry): %v",
				op, ref.Repo(), ErrAuth, err)
		}
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("%s %s: the registry at %s refused or dropped the connection (%v): check the address and that it is running, then run the same command again (it resumes)", op, ref.Repo(), ref.Registry, err)
	}
	if strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return fmt.Errorf("%s %s: %w: the registry speaks plain HTTP: pass --plain-http", op, ref.Repo(), err)
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s %s: %w: pass the registry's CA with --ca-file", op, ref.Repo(), err)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return fmt.Errorf("%s %s: %w: check the address and that the registry is running (--plain-http for an HTTP registry, --ca-file for its own certificate)", op, ref.Repo(), err)
	}
	return fmt.Errorf("%s %s: %w", op, ref.Repo(), err)
}

// notFound reports whether err says the manifest or blob is not there.
func notFound(err error) bool { return errors.Is(err, errdef.ErrNotFound) }
