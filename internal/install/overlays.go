package install

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/json"

	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/webhook"
)

// overlays writes the namespaced and cert-manager overlays of the base. Each
// patch is the difference between the base's objects and the objects the
// variant's Options give, so an overlay applied to the base equals what
// Objects returns for that variant (the install tests compare them).
func overlays(out map[string][]byte) error {
	def := Options{}
	def.defaults()

	// Namespaced: Roles in the watched namespaces instead of the watched
	// ClusterRole, and --namespaces.
	ns := Options{WatchNamespaces: ExampleWatchNamespaces}
	var watched []runtime.Object
	var patches strings.Builder
	patches.WriteString("patches:\n")
	for _, f := range append([]controller.Feature{""}, def.features()...) {
		objs := WatchedRBAC(ns, f)
		if len(objs) == 0 {
			continue
		}
		watched = append(watched, objs...)
		for _, kind := range []string{"ClusterRoleBinding", "ClusterRole"} {
			fmt.Fprintf(&patches, "- patch: |-\n    $patch: delete\n    apiVersion: rbac.authorization.k8s.io/v1\n    kind: %s\n    metadata:\n      name: %s\n", kind, def.watchedRoleName(f))
		}
	}
	roles, err := marshalAll(watched)
	if err != nil {
		return err
	}
	out[NamespacedDir+"/watched-roles.yaml"] = append([]byte(generatedHeader), roles...)
	if err := argsPatch(&patches, def, ns); err != nil {
		return err
	}
	out[NamespacedDir+"/kustomization.yaml"] = kustomization([]string{"../default", "watched-roles.yaml"}, patches.String())

	// generated-rbac: the operator gives the generated pods their RBAC, with
	// the rights that takes, in roles of their own.
	gr := Options{GenerateRBAC: true}
	granted, err := marshalAll(FeatureRBAC(gr, controller.FeatureGenerateRBAC))
	if err != nil {
		return err
	}
	out[GeneratedRBACDir+"/rbac.yaml"] = append([]byte(generatedHeader), granted...)
	at := slices.Index(Args(def), manageRBACArg+"=false")
	if at < 0 || !slices.Contains(Args(gr), manageRBACArg) {
		return fmt.Errorf("the install's arguments do not say %s", manageRBACArg)
	}
	argPath := fmt.Sprintf("/spec/template/spec/containers/0/args/%d", at)
	patches.Reset()
	fmt.Fprintf(&patches, "patches:\n- target:\n    kind: Deployment\n    name: %s\n  patch: |-\n    - op: test\n      path: %s\n      value: %s\n    - op: replace\n      path: %s\n      value: %s\n",
		Name, argPath, mustJSON(manageRBACArg+"=false"), argPath, mustJSON(manageRBACArg))
	out[GeneratedRBACDir+"/kustomization.yaml"] = kustomization([]string{"../default", "rbac.yaml"}, patches.String())

	// cert-manager: a self-signed Issuer and a Certificate for the webhook
	// Service; the operator serves cert-manager's certificate and the
	// cainjector fills the CA bundle.
	cm := Options{CertManager: true}
	cm.defaults()
	issued, err := marshalAll(CertManagerObjects(cm))
	if err != nil {
		return err
	}
	out[CertManagerDir+"/certificate.yaml"] = append([]byte(generatedHeader), issued...)
	patches.Reset()
	patches.WriteString("patches:\n")
	if err := argsPatch(&patches, def, cm); err != nil {
		return err
	}
	vol, err := json.Marshal(Deployment(cm).Spec.Template.Spec.Volumes[0])
	if err != nil {
		return err
	}
	mount, err := json.Marshal(Deployment(cm).Spec.Template.Spec.Containers[0].VolumeMounts[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(&patches, "- target:\n    kind: Deployment\n    name: %s\n  patch: |-\n    - op: replace\n      path: /spec/template/spec/volumes/0\n      value: %s\n    - op: replace\n      path: /spec/template/spec/containers/0/volumeMounts/0\n      value: %s\n", Name, vol, mount)
	fmt.Fprintf(&patches, "- target:\n    kind: ValidatingWebhookConfiguration\n    name: %s\n  patch: |-\n    - op: add\n      path: /metadata/annotations\n      value: %s\n",
		webhook.DefaultConfigurationName, mustJSON(WebhookConfiguration(cm).Annotations))
	out[CertManagerDir+"/kustomization.yaml"] = kustomization([]string{"../default", "certificate.yaml"}, patches.String())
	return nil
}

// argsPatch appends the JSON patch that adds the arguments variant has and
// base lacks (variants only add arguments).
func argsPatch(b *strings.Builder, base, variant Options) error {
	have := map[string]bool{}
	for _, a := range Args(base) {
		have[a] = true
	}
	fmt.Fprintf(b, "- target:\n    kind: Deployment\n    name: %s\n  patch: |-\n", Name)
	added := 0
	for _, a := range Args(variant) {
		if have[a] {
			continue
		}
		fmt.Fprintf(b, "    - op: add\n      path: /spec/template/spec/containers/0/args/-\n      value: %s\n", mustJSON(a))
		added++
	}
	if added == 0 {
		return fmt.Errorf("variant %+v adds no arguments", variant)
	}
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// CertManagerObjects are the Issuer and Certificate of the cert-manager
// overlay. cert-manager's types are not a dependency: these are plain maps.
func CertManagerObjects(o Options) []runtime.Object {
	o.defaults()
	svc := webhook.DefaultServiceName
	issuer := map[string]any{
		"apiVersion": "cert-manager.io/v1",
		"kind":       "Issuer",
		"metadata":   map[string]any{"name": Name + "-selfsigned", "namespace": o.Namespace, "labels": anyMap(Labels())},
		"spec":       map[string]any{"selfSigned": map[string]any{}},
	}
	cert := map[string]any{
		"apiVersion": "cert-manager.io/v1",
		"kind":       "Certificate",
		"metadata":   map[string]any{"name": svc, "namespace": o.Namespace, "labels": anyMap(Labels())},
		"spec": map[string]any{
			"secretName": CertSecret,
			"dnsNames":   []any{svc + "." + o.Namespace + ".svc", svc + "." + o.Namespace + ".svc.cluster.local"},
			"issuerRef":  map[string]any{"kind": "Issuer", "name": Name + "-selfsigned"},
		},
	}
	return []runtime.Object{unstructuredObject(issuer), unstructuredObject(cert)}
}

func unstructuredObject(m map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: m}
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
