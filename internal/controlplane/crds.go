package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the server-side-apply field manager for everything the local
// tooling installs.
const FieldOwner = "lookout-dev"

// CRD directories, relative to the repository root, as make manifests writes
// them: the monitoring.coreos.com kinds, and PGO's PostgresCluster. A test or
// demo that runs PostgreSQL installs both (InstallCRDs once per directory).
const (
	MonitoringCRDDir = "config/crd"
	PostgresCRDDir   = "config/postgres/crd"
)

// InstallCRDs applies every CRD in dir with server-side apply (several of the
// monitoring.coreos.com CRDs are larger than the client-side-apply annotation
// limit) and waits until all of them are Established.
func InstallCRDs(ctx context.Context, cfg *rest.Config, dir string) ([]string, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(c.Scheme()); err != nil {
		return nil, err
	}
	crds, err := ReadCRDs(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(crds))
	for _, crd := range crds {
		crd.TypeMeta.APIVersion = apiextensionsv1.SchemeGroupVersion.String()
		crd.TypeMeta.Kind = "CustomResourceDefinition"
		if err := c.Patch(ctx, crd, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil { //nolint:staticcheck // typed apply configurations do not exist for CRDs of other projects
			return nil, fmt.Errorf("apply CRD %s: %w", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
				return false, nil
			}
			if !established(&crd) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("CRDs not Established within 60s: %w", err)
	}
	return names, nil
}

// ReadCRDs parses every YAML file in dir, sorted by file name.
func ReadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read CRD directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(files)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := os.ReadFile(f)
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

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
