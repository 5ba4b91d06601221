package pgerr

import (
	"errors"
	"fmt"
)

// Code is a five-character SQLSTATE. It is a distinct type so that a code
// is never confused with a message.
type Code string

// Error is an error with a SQLSTATE code and the optional fields of a
// Postgres ErrorResponse.
type Error struct {
	Code    Code
	Message string
	Detail  string
	Hint    string
	// Position is the 1-based character index into the statement text the
	// user sent, or 0 when unknown.
	Position int
	// Severity is ERROR unless set (NOTICE, WARNING for notices).
	Severity string
}

// New returns an *Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithHint returns e with its hint set.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// WithDetail returns e with its detail set.
func (e *Error) WithDetail(format string, args ...any) *Error {
	e.Detail = fmt.Sprintf(format, args...)
	return e
}

// WithPosition returns e with its position set (1-based).
func (e *Error) WithPosition(pos int) *Error {
	e.Position = pos
	return e
}

func (e *Error) Error() string {
	return e.Message
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var pe *Error
	if errors.As(err, &pe) {
		return pe, true
	}
	return nil, false
}

// CodeOf returns the SQLSTATE of err, InternalError when it carries none.
func CodeOf(err error) Code {
	if pe, ok := As(err); ok {
		return pe.Code
	}
	return InternalError
}

// Wrap returns err unchanged if it already carries a code, else an *Error
// with the given code whose message is err's.
func Wrap(err error, code Code) *Error {
	if pe, ok := As(err); ok {
		return pe
	}
	return &Error{Code: code, Message: err.Error()}
}

//go:generate go run ./gen

// Class returns the two-character class of the code ("42" for 42P01).
func (c Code) Class() string {
	if len(c) < 2 {
		return ""
	}
	return string(c[:2])
}

// Name returns the Postgres condition name of the code, "" if unknown.
func (c Code) Name() string { return codeNames[c] }
