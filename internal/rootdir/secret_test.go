package rootdir

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestAdminSecret(t *testing.T) {
	r, err := Open(filepath.Join(t.TempDir(), "root"))
	if err != nil {
		t.Fatal(err)
	}
	// Concurrent first uses agree on one secret.
	var wg sync.WaitGroup
	got := make([]string, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			got[i], errs[i] = r.AdminSecret()
		}(i)
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got[i] != got[0] || len(got[i]) != len(rand.Text()) { // 128 bits: crypto/rand.Text
			t.Fatalf("secrets %q and %q", got[0], got[i])
		}
	}
	path := filepath.Join(r.Path, SecretName)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AdminSecret(); err == nil {
		t.Error("a secret readable by others was used")
	}
}
