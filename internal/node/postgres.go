package node

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/image"
	"github.com/lookout-operator/lookout/internal/scheme"
)

// PostgresImages are the images of a PostgreSQL node: the sandbox, the operator's
// image and lookout-postgres (`make images`' builder, this machine's PostgreSQL), both
// of one lookout binary.
type PostgresImages struct {
	Pause, Operator, Postgres string // references
	Files                     []string
}

// BuildPostgresImages builds the pause, lookout and lookout-postgres (PostgreSQL major)
// images into dir.
func BuildPostgresImages(ctx context.Context, root, dir string, major int) (imgs PostgresImages, err error) {
	w := newLayouts(dir)
	defer func() { imgs.Files = w.files }()
	if imgs.Pause, err = w.pause(ctx, root); err != nil {
		return imgs, err
	}
	p := image.HostPlatform()
	r := image.Release{Dir: root, Repository: TestRepository, Version: TestVersion, Commit: TestVersion,
		Created: w.created, Platforms: []image.Platform{p}}
	bin, _, err := r.Binary(ctx, "lookout", "./cmd/lookout", p)
	if err != nil {
		return imgs, err
	}
	idx, err := r.ImageOf("lookout", p, bin)
	if err != nil {
		return imgs, err
	}
	imgs.Operator = r.Ref("lookout")
	if err := w.write("lookout", imgs.Operator, idx); err != nil {
		return imgs, err
	}
	if idx, err = r.PostgresImage(ctx, major, bin); err != nil {
		return imgs, err
	}
	imgs.Postgres = r.Ref(image.PostgresName)
	return imgs, w.write(image.PostgresName, imgs.Postgres, idx)
}

// PostgresEnv is the local control plane with the monitoring and PostgresCluster CRDs,
// a real node with the PostgreSQL images imported, and the operator installed on it
// from its image through a kustomize overlay of the PostgreSQL-only base
// (config/postgres-only), as a user installs it. The operator's image carries no
// PostgreSQL: it checks PostgresClusters against the catalog of lookout-postgres
// built into it.
type PostgresEnv struct {
	Env
	PostgresImages PostgresImages
}

// StartPostgresEnv builds the images into work and starts everything; it returns once
// the operator's Deployment is Ready and one of its pods leads. Stop stops it.
func StartPostgresEnv(ctx context.Context, root, work string, major int, log io.Writer) (*PostgresEnv, error) {
	e := &PostgresEnv{}
	var err error
	if e.KubectlPath, err = controlplane.Kubectl.Ensure(ctx, log); err != nil {
		return nil, err
	}
	began := time.Now()
	if e.PostgresImages, err = BuildPostgresImages(ctx, root, work, major); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "images built in %s\n", time.Since(began).Round(10*time.Millisecond))
	if err := e.start(ctx, root, work, log); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *PostgresEnv) start(ctx context.Context, root, work string, log io.Writer) (err error) {
	// Aggregator routing: the apiserver calls the operator's webhook at a pod
	// address (StartEnv says why).
	if e.CP, err = controlplane.Start(ctx, controlplane.Options{Log: log, CRDDir: filepath.Join(root, controlplane.MonitoringCRDDir),
		ExtraAPIServerArgs: []string{"--enable-aggregator-routing=true"}}); err != nil {
		return err
	}
	if _, err := controlplane.InstallCRDs(ctx, e.CP.RESTConfig, filepath.Join(root, controlplane.PostgresCRDDir)); err != nil {
		return fmt.Errorf("install the PostgresCluster CRD: %w", err)
	}
	if e.Client, err = client.New(e.CP.RESTConfig, client.Options{Scheme: scheme.Scheme}); err != nil {
		return err
	}
	if e.Node, err = Start(ctx, e.CP, Options{Images: e.PostgresImages.Files, PauseImage: e.PostgresImages.Pause, Log: log}); err != nil {
		return err
	}
	overlay := filepath.Join(work, "overlay")
	if err := WritePostgresOverlay(overlay, root, e.PostgresImages.Operator, e.PostgresImages.Postgres); err != nil {
		return err
	}
	installing := time.Now()
	if err := e.InstallOperator(ctx, overlay); err != nil {
		return err
	}
	if e.OperatorPods, err = e.WaitOperatorReady(ctx, 5*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(log, "operator Deployment Ready with %d pods and a leader, %s after it was applied\n", len(e.OperatorPods), time.Since(installing).Round(10*time.Millisecond))
	return nil
}
