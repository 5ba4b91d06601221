package catalog

import "strconv"

// TypeString is the column's type as DESCRIBE and statements print it:
// its Type's String with NUMERIC's modifiers, NUMERIC(10,2).
func (c Column) TypeString() string {
	return c.Type.String() + c.modifiers()
}

// SQLTypeName is the column's type as format_type prints it:
// numeric(10,2), or numeric for an unconstrained NUMERIC.
func (c Column) SQLTypeName() string {
	return c.Type.SQLName() + c.modifiers()
}

// modifiers is "(p,s)" for a NUMERIC(p,s) column, else "".
func (c Column) modifiers() string {
	return TypeModifiers(c.Type, c.Precision, c.Scale)
}

// TypeModifiers is "(p,s)" for NUMERIC(p,s) (precision > 0), else "".
func TypeModifiers(t Type, precision, scale int) string {
	if t != Decimal || precision <= 0 {
		return ""
	}
	return "(" + strconv.Itoa(precision) + "," + strconv.Itoa(scale) + ")"
}

// Typmod is the atttypmod Postgres records for a column: for
// NUMERIC(p,s) ((p << 16) | (s & 0x7ff)) + 4, else -1.
func (c Column) Typmod() int32 {
	if c.Type != Decimal || c.Precision <= 0 {
		return -1
	}
	return int32(c.Precision<<16|c.Scale&0x7ff) + 4
}

// numericPrecision is information_schema's numeric_precision,
// numeric_precision_radix and numeric_scale for a NUMERIC column: NULL
// precision and scale when unconstrained, radix 10.
func numericPrecision(c Column) (prec, radix, scale any) {
	if c.Precision <= 0 {
		return nil, 10, nil
	}
	return c.Precision, 10, c.Scale
}
