package controlplane

import (
	"context"
	"os"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/crds"
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
	all, err := ReadCRDs(dir)
	if err != nil {
		return nil, err
	}
	if err := crds.Apply(ctx, c, all, FieldOwner, 60*time.Second); err != nil {
		return nil, err
	}
	return crds.Names(all), nil
}

// ReadCRDs parses every YAML file in dir, sorted by file name.
func ReadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return crds.Read(os.DirFS(dir), ".")
}
