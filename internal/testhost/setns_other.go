//go:build linux && !amd64 && !386

package testhost

import "syscall"

const sysSetns = syscall.SYS_SETNS
