package localpod

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncedVolume is a Secret or ConfigMap volume kept up to date the way the
// kubelet does it: the files live in a timestamped directory, "..data" points
// at the current one, and each key is a symlink through "..data". Swapping
// "..data" with a rename updates every file at once.
type syncedVolume struct {
	dir      string
	kind     string // Secret, ConfigMap or Projected
	name     string
	optional bool
	// sources of a Projected volume: Secrets and ConfigMaps.
	sources []corev1.VolumeProjection
	// mode is each file's mode, gid its group (the pod's fsGroup; -1: root's).
	mode    os.FileMode
	gid     int
	current map[string][]byte
	version int
}

func (v *syncedVolume) sync(ctx context.Context, c client.Reader, ns string) error {
	data, err := v.read(ctx, c, ns)
	if err != nil {
		return err
	}
	if v.current != nil && maps.EqualFunc(v.current, data, func(a, b []byte) bool { return string(a) == string(b) }) {
		return nil
	}
	return v.write(data)
}

func (v *syncedVolume) read(ctx context.Context, c client.Reader, ns string) (map[string][]byte, error) {
	if v.kind == "Projected" {
		return v.readProjected(ctx, c, ns)
	}
	key := client.ObjectKey{Namespace: ns, Name: v.name}
	data := map[string][]byte{}
	var err error
	switch v.kind {
	case "Secret":
		var s corev1.Secret
		if err = c.Get(ctx, key, &s); err == nil {
			maps.Copy(data, s.Data)
		}
	default:
		var cm corev1.ConfigMap
		if err = c.Get(ctx, key, &cm); err == nil {
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
			maps.Copy(data, cm.BinaryData)
		}
	}
	switch {
	case apierrors.IsNotFound(err) && v.optional:
		return data, nil // an optional volume is empty until the object exists
	case err != nil:
		return nil, fmt.Errorf("volume from %s %s/%s: %w", v.kind, ns, v.name, err)
	}
	return data, nil
}

// readProjected merges the sources of a projected volume, each key at its
// item's path when items are given, as the kubelet does.
func (v *syncedVolume) readProjected(ctx context.Context, c client.Reader, ns string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for i, src := range v.sources {
		var one *syncedVolume
		var items []corev1.KeyToPath
		switch {
		case src.Secret != nil:
			one = &syncedVolume{kind: "Secret", name: src.Secret.Name, optional: src.Secret.Optional != nil && *src.Secret.Optional}
			items = src.Secret.Items
		case src.ConfigMap != nil:
			one = &syncedVolume{kind: "ConfigMap", name: src.ConfigMap.Name, optional: src.ConfigMap.Optional != nil && *src.ConfigMap.Optional}
			items = src.ConfigMap.Items
		case src.ServiceAccountToken != nil:
			continue
		default:
			return nil, fmt.Errorf("projected volume source %d: only Secrets and ConfigMaps can run locally", i)
		}
		data, err := one.read(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			maps.Copy(out, data)
			continue
		}
		for _, it := range items {
			if strings.Contains(it.Path, "/") {
				return nil, fmt.Errorf("projected volume source %d: item path %q: nested paths do not run locally", i, it.Path)
			}
			if b, ok := data[it.Key]; ok {
				out[it.Path] = b
			}
		}
	}
	return out, nil
}

func (v *syncedVolume) write(data map[string][]byte) error {
	v.version++
	gen := "..v" + strconv.Itoa(v.version)
	genDir := filepath.Join(v.dir, gen)
	if err := os.MkdirAll(genDir, 0o755); err != nil {
		return err
	}
	mode := v.mode
	if mode == 0 {
		mode = 0o644
	}
	for k, b := range data {
		path := filepath.Join(genDir, k)
		if err := os.WriteFile(path, b, mode); err != nil {
			return err
		}
		// WriteFile's mode passes the umask.
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
		if v.gid >= 0 {
			if err := os.Chown(path, -1, v.gid); err != nil {
				return err
			}
		}
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(gen, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		return err
	}
	for k := range data {
		link := filepath.Join(v.dir, k)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", k), link); err != nil {
			return err
		}
	}
	for k := range v.current {
		if _, ok := data[k]; !ok {
			_ = os.Remove(filepath.Join(v.dir, k))
		}
	}
	if v.version > 1 {
		_ = os.RemoveAll(filepath.Join(v.dir, "..v"+strconv.Itoa(v.version-1)))
	}
	v.current = data
	return nil
}

func (p *Pod) syncLoop(ctx context.Context, o Options, volumes []*syncedVolume) {
	defer close(p.syncDone)
	t := time.NewTicker(o.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, v := range volumes {
				// Errors are transient here (the kubelet retries too).
				_ = v.sync(ctx, o.Client, o.PodNamespace)
			}
		}
	}
}
