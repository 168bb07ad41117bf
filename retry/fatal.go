package retry

import "errors"

// FatalError marks an error that ends the job, for a caller to whom an
// unmarked error means less: a ValueDecoder's unmarked error is one bad
// record, dead-lettered, while a schema registry that refuses the
// credentials fails every record alike, so its decoder marks that error
// Fatal and the pipeline stops with it. Make one with Fatal; find one with
// IsFatal, which callers ask before IsRetryable (a Fatal mark wins).
type FatalError struct{ Err error }

func (e *FatalError) Error() string { return e.Err.Error() }

func (e *FatalError) Unwrap() error { return e.Err }

// Fatal marks err as the end of the job. Fatal(nil) is nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return &FatalError{Err: err}
}

// IsFatal reports whether err, or an error it wraps, is marked Fatal.
func IsFatal(err error) bool {
	var e *FatalError
	return errors.As(err, &e)
}
