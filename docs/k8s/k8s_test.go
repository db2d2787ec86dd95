// Package k8s holds the Kubernetes manifests of docs/fleet.md; its test
// checks that kubectl accepts them.
package k8s

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// discovery answers the API discovery kubectl needs to map kinds to
// resources, for the kinds the manifests use; every object is "not found",
// so a client-side dry run creates them all.
func discovery(t *testing.T) *httptest.Server {
	resources := map[string]string{
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[
{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["create","get","list","patch"]},
{"name":"secrets","singularName":"secret","namespaced":true,"kind":"Secret","verbs":["create","get","list","patch"]},
{"name":"services","singularName":"service","namespaced":true,"kind":"Service","verbs":["create","get","list","patch"]}]}`,
		"/apis/apps/v1": `{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
{"name":"daemonsets","singularName":"daemonset","namespaced":true,"kind":"DaemonSet","verbs":["create","get","list","patch"]},
{"name":"statefulsets","singularName":"statefulset","namespaced":true,"kind":"StatefulSet","verbs":["create","get","list","patch"]}]}`,
		"/apis/networking.k8s.io/v1": `{"kind":"APIResourceList","groupVersion":"networking.k8s.io/v1","resources":[
{"name":"networkpolicies","singularName":"networkpolicy","namespaced":true,"kind":"NetworkPolicy","verbs":["create","get","list","patch"]}]}`,
		"/api": `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`,
		"/apis": `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
{"name":"networking.k8s.io","versions":[{"groupVersion":"networking.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"networking.k8s.io/v1","version":"v1"}}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if body, ok := resources[r.URL.Path]; ok {
			fmt.Fprint(w, body)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestServeFlagsExist: every flag of `pristine serve` the manifests pass
// is one serve defines.
func TestServeFlagsExist(t *testing.T) {
	src, err := os.ReadFile("../../internal/cli/serve.go")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*.yaml")
	for _, f := range files {
		text, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(text), "\n") {
			arg, ok := strings.CutPrefix(strings.TrimSpace(line), "- --")
			if !ok {
				continue
			}
			name, _, _ := strings.Cut(arg, "=")
			if !strings.Contains(string(src), `"`+name+`"`) {
				t.Errorf("%s passes --%s, which pristine serve does not define", f, name)
			}
		}
	}
}

func TestManifestsDryRun(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed (apt-get install kubernetes-client): the manifests are not checked")
	}
	srv := discovery(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q}}]
users: [{name: test, user: {token: test}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
`, srv.URL)
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*.yaml")
	if len(files) < 2 {
		t.Fatalf("found %v: want the DaemonSet and StatefulSet manifests", files)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			cmd := exec.Command(kubectl, "apply", "--dry-run=client", "--validate=false", "-o", "name", "-f", f)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+kc, "HOME="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=client -f %s: %v\n%s", f, err, out)
			}
			if !strings.Contains(string(out), "daemonset") && !strings.Contains(string(out), "statefulset") {
				t.Fatalf("kubectl applied no workload from %s:\n%s", f, out)
			}
			if !strings.Contains(string(out), "networkpolicy") {
				t.Errorf("%s has no NetworkPolicy: only test pods may reach the slots:\n%s", f, out)
			}
			// The pool node on the network (docs/fleet.md): slots on the
			// pod's IP, named by the leases, TLS from the Secret's CA.
			text, _ := os.ReadFile(f)
			for _, want := range []string{"fieldPath: status.podIP", "--slot-address=$(POD_IP)", "--advertise=$(POD_IP)",
				"--listen=$(POD_IP):7878", "secretName: pristine-node", "/tls/ca-key.pem", "--group-tokens=", "--max-leases-per-group=", "endPort: 65535"} {
				if !strings.Contains(string(text), want) {
					t.Errorf("%s lacks %q", f, want)
				}
			}
		})
	}
}
