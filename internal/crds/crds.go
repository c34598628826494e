// Package crds reads the monitoring.coreos.com and PostgresCluster CRDs and
// applies them: the local control plane installs them from config/crd, and
// the operator, with --install-crds, from the copy embedded in its binary.
package crds

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout"
)

// FieldOwner is the field manager of the operator's --install-crds apply. It
// is its own: a manager that applies the CRDs whole must not be the one that
// applies only their spec.conversion (the webhook), or each apply would drop
// the fields the other set.
const FieldOwner = "lookout-crds"

// Read parses every .yaml or .yml file in dir of fsys, sorted by file name.
func Read(fsys fs.FS, dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read CRD directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			files = append(files, path.Join(dir, e.Name()))
		}
	}
	slices.Sort(files)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := dec.Decode(crd); err != nil {
				if err == io.EOF {
					break
				}
				return nil, fmt.Errorf("parse %s: %w", f, err)
			}
			if crd.Name == "" {
				continue
			}
			out = append(out, crd)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CRDs found in %s", dir)
	}
	return out, nil
}

// Embedded returns the CRDs built into the binary.
func Embedded() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return Read(lookout.CRDFiles, lookout.CRDDir)
}

// EmbeddedPostgres returns the PostgresCluster CRD built into the binary.
func EmbeddedPostgres() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return Read(lookout.PostgresCRDFiles, lookout.PostgresCRDDir)
}

// Names are the names of crds, in order.
func Names(crds []*apiextensionsv1.CustomResourceDefinition) []string {
	out := make([]string, 0, len(crds))
	for _, c := range crds {
		out = append(out, c.Name)
	}
	return out
}

// Apply applies crds with server-side apply as fieldOwner (several of them
// exceed the client-side-apply annotation limit) and waits up to timeout
// until every one is Established. c's scheme must know apiextensions/v1.
// Fields that another manager owns are taken over (ForceOwnership): the
// schema is the binary's, and an older one left in place would have the
// apiserver prune the fields this version reads. Only the fields Lookout
// sets are owned, so another owner's spec.conversion or caBundle stays.
func Apply(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition, fieldOwner string, timeout time.Duration) error {
	for _, crd := range crds {
		crd = crd.DeepCopy()
		crd.APIVersion = apiextensionsv1.SchemeGroupVersion.String()
		crd.Kind = "CustomResourceDefinition"
		if err := c.Patch(ctx, crd, client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil { //nolint:staticcheck // no typed apply configurations for these CRDs
			return fmt.Errorf("apply CRD %s: %w", crd.Name, err)
		}
	}
	var waiting string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range Names(crds) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil || !Established(&crd) {
				waiting = name
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not Established within %v: %w", waiting, timeout, err)
	}
	return nil
}

// Established reports whether the apiserver serves crd.
func Established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
