package testhost

// The syscall package's table for 386 is frozen before setns(2).
const sysSetns = 346
