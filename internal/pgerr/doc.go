// Package pgerr is basin's error type for everything a user can cause:
// an Error carries a SQLSTATE Code (a distinct type, never a bare string)
// and the optional fields of a Postgres ErrorResponse (detail, hint,
// position). Errors are created where they are detected — the parser
// (42601 with the position in the user's text), the planner (42P01,
// 42703, 42883), the engine (22xxx) — and travel unchanged to pgwire,
// which writes them to the client. An error without a code reaching the
// wire is an internal error (XX000) and is logged with its stack.
package pgerr
