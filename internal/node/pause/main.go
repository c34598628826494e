// Command pause is the sandbox ("pause") container of the real-node tests: it holds a
// pod's namespaces and does nothing until it is told to stop. Built static into an
// image by internal/node, so that no image has to be pulled.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
