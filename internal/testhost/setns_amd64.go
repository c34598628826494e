package testhost

// The syscall package's table for amd64 is frozen before setns(2).
const sysSetns = 308
