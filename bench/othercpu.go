package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lookout-operator/lookout/internal/controlplane"
)

// otherCPU samples the CPU of the control plane, of the harness and of
// the whole machine, twice: before the operator starts and at convergence.
type otherCPU struct {
	apiserver, etcd int // 0: not found
	samples         []otherSample
}

type otherSample struct {
	apiserver, etcd, harness float64
	host                     hostCPU
}

func otherProcesses(cp *controlplane.ControlPlane) *otherCPU {
	o := &otherCPU{}
	var err error
	if o.apiserver, err = findPIDByArg("--secure-port=" + strconv.Itoa(cp.Port)); err != nil {
		logf("kube-apiserver CPU is not measured: %v", err)
	}
	if o.etcd, err = findPIDByArg("--data-dir=" + filepath.Join(cp.Dir, "etcd")); err != nil {
		logf("etcd CPU is not measured: %v", err)
	}
	return o
}

func (o *otherCPU) sample() {
	var s otherSample
	s.apiserver, s.etcd, s.harness = procCPU(o.apiserver), procCPU(o.etcd), procCPU(os.Getpid())
	s.host, _ = readHostCPU()
	o.samples = append(o.samples, s)
}

// procCPU is the CPU seconds process pid has used, 0 when it is not known.
func procCPU(pid int) float64 {
	if pid == 0 {
		return 0
	}
	ps, err := readProc(pid)
	if err != nil {
		return 0
	}
	return ps.cpuSeconds
}

// cpuNow is the CPU seconds the operator, kube-apiserver and etcd have used so far.
type cpuNow struct{ operator, apiserver, etcd float64 }

func (o *otherCPU) now(operator int) cpuNow {
	return cpuNow{procCPU(operator), procCPU(o.apiserver), procCPU(o.etcd)}
}

func (c cpuNow) minus(d cpuNow) cpuNow {
	return cpuNow{c.operator - d.operator, c.apiserver - d.apiserver, c.etcd - d.etcd}
}

// settle waits until kube-apiserver and etcd together use less than a tenth of a core
// over one second, or until limit has passed (then it goes on anyway).
func (o *otherCPU) settle(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		before := *o
		before.samples = nil
		before.sample()
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		before.sample()
		apiserver, etcd, _, _ := before.delta()
		if apiserver+etcd < 0.1 {
			return nil
		}
	}
	return nil
}

// delta is the CPU seconds of kube-apiserver, etcd and the harness, and the
// machine's busy percentage, between the first and the last sample.
func (o *otherCPU) delta() (apiserver, etcd, harness, hostBusy float64) {
	if len(o.samples) < 2 {
		return 0, 0, 0, 0
	}
	a, b := o.samples[0], o.samples[len(o.samples)-1]
	return b.apiserver - a.apiserver, b.etcd - a.etcd, b.harness - a.harness, busyPercent(a.host, b.host)
}
