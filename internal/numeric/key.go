package numeric

import (
	"github.com/cockroachdb/apd/v3"
)

// The order-preserving key encoding: bytes that sort as the values do,
// equal for equal values whatever their scale (1.0 and 1.00), and
// self-delimiting so that a key of several columns can follow.
//
//	-Infinity  keyNegInf
//	x < 0      keyNeg, then the encoding of |x| below with every byte inverted
//	0          keyZero
//	x > 0      keyPos, the adjusted exponent (the power of ten of the first
//	           digit) as a big-endian int32 with its sign bit flipped, the
//	           significant digits (trailing zeros dropped) one a byte as
//	           digit+1, then 0
//	Infinity   keyPosInf
//	NaN        keyNaN
//
// For positives a larger exponent is a larger value and, exponents equal,
// the digits compare as strings, the terminator 0 ending the shorter.
// Inverting the bytes reverses that order for negatives (the inverted
// terminator, 0xff, sorts after every inverted digit).
const (
	keyNegInf = 0x01
	keyNeg    = 0x02
	keyZero   = 0x03
	keyPos    = 0x04
	keyPosInf = 0x05
	keyNaN    = 0x06
)

// AppendKey appends d's key encoding.
func AppendKey(buf []byte, d *apd.Decimal) []byte {
	switch {
	case isNaN(d):
		return append(buf, keyNaN)
	case d.Form == apd.Infinite && d.Negative:
		return append(buf, keyNegInf)
	case d.Form == apd.Infinite:
		return append(buf, keyPosInf)
	case d.Coeff.Sign() == 0:
		return append(buf, keyZero)
	}
	digits := d.Coeff.Append(nil, 10)
	adj := int32(len(digits)-1) + d.Exponent
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	tag := byte(keyPos)
	if d.Negative {
		tag = keyNeg
	}
	buf = append(buf, tag)
	start := len(buf)
	e := uint32(adj) ^ 1<<31
	buf = append(buf, byte(e>>24), byte(e>>16), byte(e>>8), byte(e))
	for _, c := range digits {
		buf = append(buf, c-'0'+1)
	}
	buf = append(buf, 0)
	if d.Negative {
		for i := start; i < len(buf); i++ {
			buf[i] = ^buf[i]
		}
	}
	return buf
}

// KeyLen returns the length of the key encoding at the start of b, or
// -1 when b does not start with one.
func KeyLen(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	switch b[0] {
	case keyNegInf, keyZero, keyPosInf, keyNaN:
		return 1
	case keyPos, keyNeg:
		end := byte(0)
		if b[0] == keyNeg {
			end = 0xff
		}
		for i := 5; i < len(b); i++ {
			if b[i] == end {
				return i + 1
			}
		}
	}
	return -1
}

// ParseKey decodes a key encoding made by AppendKey. The value has the
// fewest digits after the point that hold it (the key keeps no scale).
func ParseKey(b []byte) (*apd.Decimal, int, error) {
	n := KeyLen(b)
	if n < 0 {
		return nil, 0, errBinary
	}
	switch b[0] {
	case keyNegInf:
		return NegInf, 1, nil
	case keyZero:
		return Zero, 1, nil
	case keyPosInf:
		return PosInf, 1, nil
	case keyNaN:
		return NaN, 1, nil
	}
	neg := b[0] == keyNeg
	body := make([]byte, n-1)
	copy(body, b[1:n])
	if neg {
		for i := range body {
			body[i] = ^body[i]
		}
	}
	adj := int32(uint32(body[0])<<24|uint32(body[1])<<16|uint32(body[2])<<8|uint32(body[3])) ^ -1<<31
	digits := body[4 : len(body)-1]
	if adj < -2*maxScale || adj > 2*maxIntDigits {
		return nil, 0, errBinary // beyond any numeric: refused before 10^adj is built
	}
	if len(digits) == 0 || digits[0] == 1 || digits[len(digits)-1] == 1 {
		return nil, 0, errBinary // not canonical: zero digits at an end
	}
	d := &apd.Decimal{Negative: neg}
	ten := apd.NewBigInt(10)
	for _, c := range digits {
		if c < 1 || c > 10 {
			return nil, 0, errBinary
		}
		d.Coeff.Mul(&d.Coeff, ten)
		d.Coeff.Add(&d.Coeff, apd.NewBigInt(int64(c-1)))
	}
	d.Exponent = adj - int32(len(digits)-1)
	return normalize(d), n, nil
}
