package devenv

import (
	corev1 "k8s.io/api/core/v1"

	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// RunImageFrom makes the instance pods that start from now on with image
// run the PostgreSQL of binDir, as an image of that release would carry it at
// the instance manager's default path; pods of other images run the host's.
// Two images of two releases make a minor upgrade real: each pod runs the
// release its image names.
func (pp *PostgresPods) RunImageFrom(image, binDir string) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.binDirs == nil {
		pp.binDirs = map[string]string{}
	}
	pp.binDirs[image] = binDir
}

// withPostgresBinDir is spec with the instance container pointed at the bin
// directory its image runs from (RunImageFrom).
func (pp *PostgresPods) withPostgresBinDir(spec corev1.PodSpec) corev1.PodSpec {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	out := *spec.DeepCopy()
	for i := range out.Containers {
		c := &out.Containers[i]
		if dir, ok := pp.binDirs[c.Image]; ok && c.Name == pgrender.ContainerName {
			c.Args = append(c.Args, "--bin-dir="+dir)
		}
	}
	return out
}
