// Package workload holds what every workload Lookout generates shares, whatever the kind
// (Prometheus, Alertmanager, ...): checks of the pod-level spec fields the kinds have in
// common, image references, durations and versions, security contexts, the config-reloader
// containers and the strategic-merge patches users apply to generated containers. It is
// pure, like the rest of render.
package workload

import "fmt"

// Reasons of a SpecError, usable as condition reasons.
const (
	// ReasonInvalidSpec: a field has a value that would produce a broken workload.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonUnsupportedField: a field the existing operator honours and Lookout does not
	// yet. Rejecting it is better than silently running something the user did not ask for.
	ReasonUnsupportedField = "UnsupportedField"
)

// SpecError is a problem in a workload's spec that the user has to fix; retrying does not help.
type SpecError struct {
	// Field is the path of the offending field, e.g. "spec.retention".
	Field string
	// Reason is ReasonInvalidSpec or ReasonUnsupportedField.
	Reason string
	// Message says what is wrong and how to fix it; it names the field.
	Message string
}

func (e *SpecError) Error() string { return e.Message }

// Invalid is a ReasonInvalidSpec error on field.
func Invalid(field, format string, args ...any) *SpecError {
	return &SpecError{Field: field, Reason: ReasonInvalidSpec, Message: field + ": " + fmt.Sprintf(format, args...)}
}

// Unsupported is a ReasonUnsupportedField error on field.
func Unsupported(field, why string) *SpecError {
	return &SpecError{Field: field, Reason: ReasonUnsupportedField, Message: field + " is not supported by Lookout yet: " + why}
}

// FirstError runs the checks in order and returns the first problem. It returns a nil
// error (not a nil *SpecError inside an error) when every check passes.
func FirstError[T any](obj T, checks ...func(T) *SpecError) error {
	for _, check := range checks {
		if err := check(obj); err != nil {
			return err
		}
	}
	return nil
}
