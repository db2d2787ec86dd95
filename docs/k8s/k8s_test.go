// Package k8s holds the Kubernetes manifests of docs/fleet.md; its test
// checks that kubectl accepts them, and the Helm chart made from them
// (deploy/helm/pristine) with them.
package k8s

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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

// TestServeFlagsExist: every flag of `pristine serve` the manifests and
// the chart's rendered manifests pass is one serve defines.
func TestServeFlagsExist(t *testing.T) {
	src, err := os.ReadFile("../../internal/cli/serve.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range manifests(t) {
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

// helmVersion is the helm the chart is checked with, built from its Go
// module (the module proxy serves it).
const helmVersion = "helm.sh/helm/v3/cmd/helm@v3.22.0"

// chartValues are the value sets the chart is rendered with: each mode,
// with a token and a group's token.
var chartValues = map[string][]string{
	"chart-daemonset.yaml":   {"--set", "token=t0", "--set", "groupTokens.runner-a=t1"},
	"chart-statefulset.yaml": {"--set", "token=t0", "--set", "groupTokens.runner-a=t1", "--set", "mode=statefulset", "--set", "tls.ca=C", "--set", "tls.caKey=K"},
}

// helm runs helm's command line (go run of helmVersion) and returns its
// output; it skips the test where helm cannot be built (no module proxy).
func helm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append([]string{"run", helmVersion}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "go: ") && !strings.Contains(stderr.String(), "Error:") {
			t.Skipf("helm could not be built (go run %s): %s", helmVersion, stderr.String())
		}
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

var (
	chartOnce  sync.Once
	chartDir   string
	chartFiles []string
)

// TestMain removes the chart's rendered manifests after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if chartDir != "" {
		os.RemoveAll(chartDir)
	}
	os.Exit(code)
}

// manifests are the manifests of this directory and the chart
// (deploy/helm/pristine) rendered by `helm template` with each of
// chartValues, after `helm lint` passed for each.
func manifests(t *testing.T) []string {
	files, _ := filepath.Glob("*.yaml")
	if len(files) < 2 {
		t.Fatalf("found %v: want the DaemonSet and StatefulSet manifests", files)
	}
	chartOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pristine-chart")
		if err != nil {
			t.Fatal(err)
		}
		chartDir = dir
		for name, values := range chartValues {
			helm(t, append([]string{"lint", "--strict", chart}, values...)...)
			out := helm(t, append([]string{"template", "pristine", chart, "--namespace", "pristine"}, values...)...)
			f := filepath.Join(dir, name)
			if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			chartFiles = append(chartFiles, f)
		}
	})
	if len(chartFiles) != len(chartValues) {
		t.Fatal("the chart was not rendered (see the first test that rendered it)")
	}
	return append(files, chartFiles...)
}

// chart is the Helm chart made from these manifests.
const chart = "../../deploy/helm/pristine"

// TestChartRefusesNoToken: the chart renders no pool node without its API
// token (or an existing Secret).
func TestChartRefusesNoToken(t *testing.T) {
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "run", helmVersion, "template", "pristine", chart)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("helm template without a token rendered:\n%s", out)
	}
	if !strings.Contains(string(out), "set token") {
		if strings.Contains(string(out), "go: ") {
			t.Skipf("helm could not be built: %s", out)
		}
		t.Fatalf("helm template without a token failed without naming the fix: %s", out)
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
	for _, f := range manifests(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
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
