package pgharness

import "fmt"

// Runner is the harness's T outside a test (the bench, the demo): Fatalf
// panics, Try turns that panic into an error, and Close runs the cleanups,
// last first.
type Runner struct {
	// Log, when set, is where Logf writes.
	Log      func(format string, args ...any)
	cleanups []func()
	failed   bool
}

type fatal string

func (r *Runner) Helper()          {}
func (r *Runner) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *Runner) Failed() bool     { return r.failed }
func (r *Runner) Logf(format string, args ...any) {
	if r.Log != nil {
		r.Log(format, args...)
	}
}

func (r *Runner) Fatalf(format string, args ...any) {
	r.failed = true
	panic(fatal(fmt.Sprintf(format, args...)))
}

// Close runs the cleanups registered so far, last first.
func (r *Runner) Close() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}

// Try runs fn; a Fatalf in it is returned as an error.
func (r *Runner) Try(fn func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			msg, ok := v.(fatal)
			if !ok {
				panic(v)
			}
			err = fmt.Errorf("%s", msg)
		}
	}()
	fn()
	return nil
}
