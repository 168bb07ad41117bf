package deploy

import (
	"errors"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/signalbox/signalbox/config"
)

// podMonitor is monitoring.coreos.com/v1 PodMonitor, reduced to the fields
// the manifest may use, with the operator's JSON names: strict decoding
// refuses any other. (The operator's API module would bring
// controller-runtime and apiextensions-apiserver into the build.)
type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel          string               `json:"jobLabel,omitempty"`
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector *struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
		PodMetricsEndpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path,omitempty"`
			Scheme        string `json:"scheme,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// kinds maps apiVersion/kind to a new value of its API type.
var kinds = map[string]func() any{
	"v1/ConfigMap":                        func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                           func() any { return new(corev1.Secret) },
	"v1/Service":                          func() any { return new(corev1.Service) },
	"apps/v1/StatefulSet":                 func() any { return new(appsv1.StatefulSet) },
	"monitoring.coreos.com/v1/PodMonitor": func() any { return new(podMonitor) },
}

// decode decodes one manifest strictly, as the API server does: field names
// are case-sensitive, and duplicate keys and fields its type does not have
// are errors. (encoding/json, under sigs.k8s.io/yaml's UnmarshalStrict,
// would take clusterIp for clusterIP.)
func decode(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	mk, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, &unknownKind{tm.APIVersion + "/" + tm.Kind}
	}
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	obj := mk()
	strict, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	return obj, errors.Join(append(strict, err)...)
}

type unknownKind struct{ kind string }

func (u *unknownKind) Error() string { return "no API type for " + u.kind + " in this test" }

// kubectlExtensions are the files `kubectl apply -f <dir>` reads in a
// directory (k8s.io/cli-runtime's FileExtensions); it skips any other.
var kubectlExtensions = []string{".json", ".yaml", ".yml"}

// applied lists the files `kubectl apply -f kubernetes/` applies, and, to
// be safe, those `kubectl apply -R -f kubernetes/` would add from folders
// below; examples lists the others whose name ends in .example.
func applied(t *testing.T) (files, examples []string) {
	t.Helper()
	err := filepath.WalkDir("kubernetes", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil || d.IsDir():
			return err
		case slices.Contains(kubectlExtensions, filepath.Ext(path)):
			files = append(files, path)
		case strings.HasSuffix(path, ".example"):
			examples = append(examples, path)
		}
		return nil
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in kubernetes/: %v", err)
	}
	return files, examples
}

// objects is every manifest of deploy/kubernetes, decoded.
type objects struct {
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	services     []*corev1.Service
	statefulSets []*appsv1.StatefulSet
	podMonitors  []*podMonitor
}

var (
	docSep  = regexp.MustCompile(`(?m)^---\s*$`)
	comment = regexp.MustCompile(`(?m)^#.*$`)
)

// loadManifests decodes the manifests `kubectl apply -f kubernetes/`
// applies: a StatefulSet, a Service, a PodMonitor and a ConfigMap, and no
// Secret (its example is not applied: loadExamples).
func loadManifests(t *testing.T) objects {
	t.Helper()
	files, _ := applied(t)
	o := decodeFiles(t, files)
	if len(o.statefulSets) != 1 || len(o.services) != 1 || len(o.podMonitors) != 1 || len(o.configMaps) != 1 || len(o.secrets) != 0 {
		t.Fatalf("want one StatefulSet, Service, PodMonitor and ConfigMap applied, and no Secret; have %d, %d, %d, %d, %d",
			len(o.statefulSets), len(o.services), len(o.podMonitors), len(o.configMaps), len(o.secrets))
	}
	return o
}

// loadExamples decodes the examples beside the manifests, which kubectl
// does not apply: the Secret.
func loadExamples(t *testing.T) objects {
	t.Helper()
	_, examples := applied(t)
	o := decodeFiles(t, examples)
	if len(o.secrets) != 1 || len(o.statefulSets)+len(o.services)+len(o.podMonitors)+len(o.configMaps) != 0 {
		t.Fatalf("want one example, a Secret; have %d Secrets in %q", len(o.secrets), examples)
	}
	return o
}

func decodeFiles(t *testing.T, files []string) objects {
	t.Helper()
	o := objects{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range docSep.Split(string(b), -1) {
			if strings.TrimSpace(comment.ReplaceAllString(doc, "")) == "" {
				continue
			}
			obj, err := decode([]byte(doc))
			if err != nil {
				t.Errorf("%s, document %d: %v", f, i, err)
				continue
			}
			switch v := obj.(type) {
			case *corev1.ConfigMap:
				o.configMaps[v.Name] = v
			case *corev1.Secret:
				o.secrets[v.Name] = v
			case *corev1.Service:
				o.services = append(o.services, v)
			case *appsv1.StatefulSet:
				o.statefulSets = append(o.statefulSets, v)
			case *podMonitor:
				o.podMonitors = append(o.podMonitors, v)
			}
		}
	}
	return o
}

// The decoding is strict: a misspelt field, a field at the wrong level and
// a duplicate key are refused, so the manifests' passing means something.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt":  "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {clusterIp: None}\n",
		"misplaced": "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {template: {spec: {containers: [{name: c, livenessProbe: {path: /healthz}}]}}}\n",
		"duplicate": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata: {a: b}\ndata: {c: d}\n",
		"monitor":   "apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: s}\nspec: {podMetricsEndpoints: [{port: admin, pth: /metrics}]}\n",
		"kind":      "apiVersion: v1\nkind: Deployment\nmetadata: {name: s}\n",
	} {
		if _, err := decode([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

// TestKubernetesManifests decodes every manifest strictly, validates the
// ConfigMap's job as `signalbox validate` does, and checks that the
// manifests wire the job up: its secrets, its state directory, its admin
// port and probes, and the selectors.
func TestKubernetesManifests(t *testing.T) {
	o := loadManifests(t)
	sts, svc, pm := o.statefulSets[0], o.services[0], o.podMonitors[0]
	pod := sts.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]

	// The job file: mounted from the ConfigMap where -c points.
	i := slices.Index(c.Args, "-c")
	if i < 0 || i+1 == len(c.Args) || !slices.Contains(c.Args, "run") {
		t.Fatalf("args %q: want run -c <job file>", c.Args)
	}
	jobPath := c.Args[i+1]
	mount, vol := mountOf(t, c, pod.Volumes, jobPath)
	if vol == nil || vol.ConfigMap == nil {
		t.Fatalf("%s is not on a ConfigMap volume", jobPath)
	}
	cm := o.configMaps[vol.ConfigMap.Name]
	if cm == nil {
		t.Fatalf("ConfigMap %q is not among the manifests", vol.ConfigMap.Name)
	}
	key := strings.TrimPrefix(strings.TrimPrefix(jobPath, mount.MountPath), "/")
	text, ok := cm.Data[key]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %q", cm.Name, key)
	}
	job, err := config.Parse([]byte(text))
	if err == nil {
		err = job.Validate()
	}
	if err != nil {
		t.Fatalf("the ConfigMap's job does not validate:\n%v", err)
	}

	// Static membership from the pod name; the secrets from the Secret.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if job.Group == "" || job.GroupInstanceIDEnv == "" {
		t.Errorf("the job has no group or no group_instance_id_env: static membership needs both")
	} else if e := env[job.GroupInstanceIDEnv]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("%s is not set from the pod's metadata.name: %+v", job.GroupInstanceIDEnv, e)
	}
	secretEnv := []string{job.SASL.PasswordEnv}
	for _, s := range job.Sinks {
		switch c := s.Settings.(type) {
		case *config.PostgresSink:
			secretEnv = append(secretEnv, c.DSNEnv)
		case *config.BulkSink:
			secretEnv = append(secretEnv, c.AuthEnv)
		}
	}
	// The Secret is created by the command docs/operations.md gives (and
	// the example's header repeats), never applied with the manifests: the
	// example and the command hold every key the StatefulSet refers to.
	examples := loadExamples(t).secrets
	for _, name := range secretEnv {
		if name == "" {
			continue
		}
		e := env[name]
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s (named by the job) is not set from a Secret: %+v", name, e)
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if s := examples[ref.Name]; s == nil {
			t.Errorf("%s: Secret %q has no example", name, ref.Name)
		} else if _, ok := s.StringData[ref.Key]; !ok {
			t.Errorf("%s: the example of Secret %s has no key %q", name, s.Name, ref.Key)
		}
		for _, f := range []string{"../docs/operations.md", "kubernetes/secret.yaml.example"} {
			if keys := createSecretKeys(t, f, ref.Name); !slices.Contains(keys, ref.Key) {
				t.Errorf("%s: %s has no `kubectl create secret generic %s` with --from-literal=%s= (it has %q)", name, f, ref.Name, ref.Key, keys)
			}
		}
	}

	// state.dir on the pod's own persistent volume.
	if job.State.Dir == "" {
		t.Fatal("the job has no state.dir")
	}
	mount, _ = mountOf(t, c, pod.Volumes, job.State.Dir)
	if mount == nil || !slices.ContainsFunc(sts.Spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool { return p.Name == mount.Name }) {
		t.Errorf("state.dir %s is not on a volumeClaimTemplate's volume", job.State.Dir)
	} else if mount.ReadOnly {
		t.Errorf("state.dir %s is on a read-only mount", job.State.Dir)
	}
	// The dead letters go to a Kafka topic a downstream consumer reads, not
	// to a file on each pod's volume.
	if job.DeadLetter == nil {
		t.Error("the job has no dead_letter sink")
	} else if dl, ok := job.DeadLetter.Settings.(*config.KafkaSink); !ok || dl.Topic == "" {
		t.Errorf("dead_letter is a %T, want a kafka sink with a topic", job.DeadLetter.Settings)
	}

	// The admin server on every interface of the pod, its port named admin,
	// the probes on it.
	host, port, err := net.SplitHostPort(job.Admin.Addr)
	if err != nil || host != "0.0.0.0" {
		t.Errorf("admin.addr %q: want 0.0.0.0:<port>, reachable from the pod network", job.Admin.Addr)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "admin" && port == itoa(p.ContainerPort) }) {
		t.Errorf("no container port named admin on admin.addr's port %s: %+v", port, c.Ports)
	}
	for name, pr := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Path != name || pr.HTTPGet.Port.String() != "admin" {
			t.Errorf("probe for %s: %+v", name, pr)
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container security context %+v: want a read-only root and no privilege escalation", sc)
	}
	if ps := pod.SecurityContext; ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
		t.Errorf("the pod may run as root")
	}

	// Selectors: the StatefulSet's, the Service's and the PodMonitor's all
	// select the pods.
	labels := sts.Spec.Template.Labels
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || !sel.Matches(labelSet(labels)) {
		t.Errorf("the StatefulSet's selector does not select its pods: %v", err)
	}
	if sts.Spec.ServiceName != svc.Name || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("serviceName %q, Service %q with clusterIP %q: want the headless Service", sts.Spec.ServiceName, svc.Name, svc.Spec.ClusterIP)
	}
	for k, v := range svc.Spec.Selector {
		if labels[k] != v {
			t.Errorf("the Service selects %s=%s; the pods have %q", k, v, labels[k])
		}
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.TargetPort.String() == "admin" }) {
		t.Errorf("the Service has no port to the admin port")
	}
	sel, err = metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labelSet(labels)) {
		t.Errorf("the PodMonitor's selector does not select the pods: %v", err)
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port != "admin" || pm.Spec.PodMetricsEndpoints[0].Path != "/metrics" {
		t.Errorf("PodMonitor endpoints %+v: want port admin, path /metrics", pm.Spec.PodMetricsEndpoints)
	}
}

// createSecretKeys returns the keys of the `kubectl create secret generic
// name` command in file (its --from-literal and --from-file keys, over
// continued lines).
func createSecretKeys(t *testing.T, file, name string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\n#", "\n")
	i := strings.Index(text, "kubectl create secret generic "+name+" ")
	if i < 0 {
		return nil
	}
	var cmd strings.Builder
	for _, line := range strings.Split(text[i:], "\n") {
		cmd.WriteString(line)
		if !strings.HasSuffix(strings.TrimSpace(line), "\\") {
			break
		}
	}
	var keys []string
	for _, m := range regexp.MustCompile(`--from-(?:literal|file)=([A-Za-z0-9._-]+)=`).FindAllStringSubmatch(cmd.String(), -1) {
		keys = append(keys, m[1])
	}
	return keys
}

// TestSecretIsNotApplied: `kubectl apply -f deploy/kubernetes/` applies no
// Secret and no placeholder password; the example that shows the Secret's
// shape is a file kubectl skips.
func TestSecretIsNotApplied(t *testing.T) {
	files, examples := applied(t)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "change-me") {
			t.Errorf("%s, applied by kubectl apply -f, holds a placeholder password", f)
		}
	}
	if !slices.Contains(examples, filepath.Join("kubernetes", "secret.yaml.example")) {
		t.Errorf("no kubernetes/secret.yaml.example among %q", examples)
	}
	if s := loadExamples(t).secrets["signalbox-secrets"]; s == nil {
		t.Error("the example is not the signalbox-secrets Secret")
	}
}

// mountOf returns the container's mount holding file (the longest mount
// path that contains it) and its pod volume (nil for a claim template's).
func mountOf(t *testing.T, c corev1.Container, vols []corev1.Volume, file string) (*corev1.VolumeMount, *corev1.Volume) {
	t.Helper()
	var best *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path.Clean(file))
		if err == nil && !strings.HasPrefix(rel, "..") && (best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = &c.VolumeMounts[i]
		}
	}
	if best == nil {
		return nil, nil
	}
	for i := range vols {
		if vols[i].Name == best.Name {
			return best, &vols[i]
		}
	}
	return best, nil
}
func labelSet(m map[string]string) k8slabels.Set { return k8slabels.Set(m) }

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// TestImageIsTheOneTheDocsBuild holds the StatefulSet's image to the tag
// that README.md's install section and the Dockerfile's header build, so
// that `kubectl apply` after following them does not pull another image.
func TestImageIsTheOneTheDocsBuild(t *testing.T) {
	image := loadManifests(t).statefulSets[0].Spec.Template.Spec.Containers[0].Image
	if image == "" {
		t.Fatal("the StatefulSet's container names no image")
	}
	for _, f := range []string{"../README.md", "../Dockerfile"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "docker build ") || !strings.Contains(string(b), " -t "+image+" .") {
			t.Errorf("%s: no `docker build ... -t %s .`, the image deploy/kubernetes/statefulset.yaml runs", f, image)
		}
	}
}
