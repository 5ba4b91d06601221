// Package numeric is the arithmetic of basin's NUMERIC type: Postgres's
// arbitrary-precision decimal, held as an *apd.Decimal that is never
// mutated once made.
//
// Postgres gives every numeric value a display scale (dscale), the number
// of digits kept after the point: 1.50 and 1.5 are equal but print
// differently. Here the scale is the decimal's negative exponent: every
// value this package returns has an exponent of zero or below, so
// 1.50 is 150×10⁻² and 1e3 is 1000×10⁰, and Text('f') prints it as
// Postgres does. The operators follow numeric.c's rules for the result's
// scale (add and subtract: the larger scale; multiply: the sum; divide:
// select_div_scale's at least 16 significant digits), and round half
// away from zero as Postgres does.
//
// NaN and ±Infinity are the special values; NaN equals itself and sorts
// above everything, as in Postgres. There is no negative zero.
//
// The layers above use it: pgcodec for the wire's text and binary forms
// (binary.go here builds Postgres's base-10000 digits), planner and eval
// for casts, operators and aggregates, materialize for the stored and
// order-preserving key encodings (key.go), serde for JSON.
//
// numeric imports internal/pgerr: its errors carry Postgres's
// SQLSTATEs.
package numeric
