package numeric

import (
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/apd/v3"
)

// Postgres's binary numeric: int16 ndigits, int16 weight, uint16 sign,
// uint16 dscale, then ndigits base-10000 digits, most significant first,
// the first of weight `weight` (the value is Σ digit·10000^(weight-i)).
// Leading and trailing zero digits are left out; zero has none.
const (
	signPos    = 0x0000
	signNeg    = 0x4000
	signNaN    = 0xC000
	signPosInf = 0xD000
	signNegInf = 0xF000
)

var errBinary = errors.New("numeric: invalid binary numeric")

// AppendBinary appends d in Postgres's binary format.
func AppendBinary(buf []byte, d *apd.Decimal) []byte {
	head := func(ndigits, weight int, sign, dscale uint16) []byte {
		buf = binary.BigEndian.AppendUint16(buf, uint16(int16(ndigits)))
		buf = binary.BigEndian.AppendUint16(buf, uint16(int16(weight)))
		buf = binary.BigEndian.AppendUint16(buf, sign)
		return binary.BigEndian.AppendUint16(buf, dscale)
	}
	switch {
	case isNaN(d):
		return head(0, 0, signNaN, 0)
	case d.Form == apd.Infinite && d.Negative:
		return head(0, 0, signNegInf, 0)
	case d.Form == apd.Infinite:
		return head(0, 0, signPosInf, 0)
	}
	dscale := Scale(d)
	sign := uint16(signPos)
	if d.Negative && d.Coeff.Sign() != 0 {
		sign = signNeg
	}
	// Align the coefficient on a base-10000 digit: exponent a multiple
	// of 4 (never above zero: normalize guarantees exponent ≤ 0).
	var c apd.BigInt
	c.Set(&d.Coeff)
	exp := int(d.Exponent)
	if exp > 0 {
		c.Mul(&c, pow10(exp))
		exp = 0
	}
	if pad := floorMod(exp, 4); pad != 0 {
		c.Mul(&c, pow10(pad))
		exp -= pad
	}
	var groups []int16 // least significant first
	var q, r apd.BigInt
	base := apd.NewBigInt(10000)
	for c.Sign() != 0 {
		q.QuoRem(&c, base, &r)
		groups = append(groups, int16(r.Int64()))
		c.Set(&q)
	}
	low := exp / 4 // weight of groups[0]
	for len(groups) > 0 && groups[0] == 0 {
		groups = groups[1:]
		low++
	}
	if len(groups) == 0 {
		return head(0, 0, sign, uint16(dscale))
	}
	buf = head(len(groups), low+len(groups)-1, sign, uint16(dscale))
	for i := len(groups) - 1; i >= 0; i-- {
		buf = binary.BigEndian.AppendUint16(buf, uint16(groups[i]))
	}
	return buf
}

func floorMod(a, b int) int {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// ParseBinary reads a numeric in Postgres's binary format.
func ParseBinary(b []byte) (*apd.Decimal, error) {
	if len(b) < 8 {
		return nil, errBinary
	}
	ndigits := int(int16(binary.BigEndian.Uint16(b)))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	switch sign {
	case signNaN:
		return NaN, nil
	case signPosInf:
		return PosInf, nil
	case signNegInf:
		return NegInf, nil
	case signPos, signNeg:
	default:
		return nil, errBinary
	}
	if ndigits < 0 || len(b) != 8+2*ndigits || dscale > 0x3FFF {
		return nil, errBinary
	}
	d := &apd.Decimal{Negative: sign == signNeg}
	base := apd.NewBigInt(10000)
	for i := 0; i < ndigits; i++ {
		g := int16(binary.BigEndian.Uint16(b[8+2*i:]))
		if g < 0 || g > 9999 {
			return nil, errBinary
		}
		d.Coeff.Mul(&d.Coeff, base)
		d.Coeff.Add(&d.Coeff, apd.NewBigInt(int64(g)))
	}
	d.Exponent = int32(4 * (weight - ndigits + 1))
	// Show exactly dscale digits after the point, as the sender meant;
	// digits beyond it are truncated, as numeric_recv does.
	return rescale(normalize(d), dscale, false), nil
}
