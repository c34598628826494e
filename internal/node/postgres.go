package node

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/image"
	"github.com/lookout-operator/lookout/internal/scheme"
)

// PostgresImages are the images of a PostgreSQL node: the sandbox and lookout-postgres
// (`make images`' builder, this machine's PostgreSQL), and the lookout binary that image
// carries, written out for the operator to run on the host.
type PostgresImages struct {
	Pause, Postgres string // references
	Files           []string
	Lookout         string // path
}

// BuildPostgresImages builds the pause and lookout-postgres images of PostgreSQL major
// into dir, and writes the lookout binary in the image to dir/lookout.
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
	imgs.Lookout = filepath.Join(dir, "lookout")
	if err := os.WriteFile(imgs.Lookout, bin, 0o755); err != nil {
		return imgs, err
	}
	idx, err := r.PostgresImage(ctx, major, bin)
	if err != nil {
		return imgs, err
	}
	imgs.Postgres = r.Ref(image.PostgresName)
	return imgs, w.write(image.PostgresName, imgs.Postgres, idx)
}

// PostgresEnv is the local control plane with the monitoring and PostgresCluster CRDs,
// a real node with the PostgreSQL images imported, and the operator: the lookout
// binary of the image, run on the host with --postgres-image naming the imported
// image. The operator runs outside the node because it checks each PostgresCluster
// against the PostgreSQL it finds on its own filesystem (its --postgres-bin-dirs),
// which the lookout image does not carry, and the install paths do not yet give it
// the PostgresCluster RBAC.
type PostgresEnv struct {
	Env
	PostgresImages PostgresImages
	Operator       *devenv.Operator
}

// StartPostgresEnv builds the images into work and starts everything; Stop stops it.
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
	if e.CP, err = controlplane.Start(ctx, controlplane.Options{Log: log, CRDDir: filepath.Join(root, controlplane.MonitoringCRDDir)}); err != nil {
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
	e.Operator, err = devenv.StartOperator(ctx, e.PostgresImages.Lookout, e.CP.KubeconfigPath, filepath.Join(work, "operator.log"),
		"--postgres-image="+e.PostgresImages.Postgres)
	return err
}

// OperatorLog is the end of the operator's log, for failures.
func (e *PostgresEnv) OperatorLog() string {
	if e.Operator == nil {
		return ""
	}
	b, _ := os.ReadFile(e.Operator.LogPath)
	return devenv.LastBytes(b, 4000)
}

// Stop stops the operator, the node and the control plane.
func (e *PostgresEnv) Stop() {
	if e.Operator != nil {
		e.Operator.Stop()
	}
	e.Env.Stop()
}
