package materialize

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/basindb/basin/catalog"
)

// Encodings of the DATE, TIME and INTERVAL values (TIMESTAMPTZ values
// are time.Time and encode as timestamps do). Their tags are apart from
// the first types' so that other types can be added in between.
//
// Rows:
//
//	DATE      0x20  zigzag varint days since 1970-01-01
//	TIME      0x21  zigzag varint microseconds since midnight
//	INTERVAL  0x22  zigzag varints months, days, microseconds
//
// Keys (order-preserving, canonical):
//
//	DATE      0x60  4 bytes big-endian, sign bit flipped
//	TIME      0x61  8 bytes big-endian, sign bit flipped
//	INTERVAL  0x62  its Span (a month as 30 days, a day as 24 hours) as 8
//	                bytes big-endian, sign bit flipped: so intervals Postgres
//	                holds equal ('1 mon' and '30 days') have one key, in
//	                Postgres's order. The key decodes to the justified form
//	                (months, then days under 30, then time under a day, all
//	                of one sign), which compares equal to every interval of
//	                the key.
const (
	rowDate     = 0x20
	rowTime     = 0x21
	rowInterval = 0x22

	keyDate      = 0x60
	keyTimeOfDay = 0x61
	keyInterval  = 0x62
)

// appendRowDatetime appends v's row encoding; ok is false for any other
// Go type.
func appendRowDatetime(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case catalog.DateVal:
		dst = append(dst, rowDate)
		return binary.AppendVarint(dst, int64(v)), true
	case catalog.TimeOfDay:
		dst = append(dst, rowTime)
		return binary.AppendVarint(dst, int64(v)), true
	case catalog.IntervalVal:
		dst = append(dst, rowInterval)
		dst = binary.AppendVarint(dst, int64(v.Months))
		dst = binary.AppendVarint(dst, int64(v.Days))
		return binary.AppendVarint(dst, v.Micros), true
	}
	return dst, false
}

// decodeRowDatetime decodes the value of a row tag that is one of the
// three; n is the payload's length, ok false for another tag.
func decodeRowDatetime(tag byte, b []byte) (v any, n int, ok bool, err error) {
	varint := func() int64 {
		x, k := binary.Varint(b[n:])
		if k <= 0 {
			err = fmt.Errorf("%w: bad value of row tag %#02x", ErrBadEncoding, tag)
			return 0
		}
		n += k
		return x
	}
	switch tag {
	case rowDate:
		d := varint()
		if err == nil && (d < math.MinInt32 || d > math.MaxInt32) {
			err = fmt.Errorf("%w: date out of range", ErrBadEncoding)
		}
		return catalog.DateVal(d), n, true, err
	case rowTime:
		t := varint()
		return catalog.TimeOfDay(t), n, true, err
	case rowInterval:
		m := varint()
		var d, us int64
		if err == nil {
			d = varint()
		}
		if err == nil {
			us = varint()
		}
		if err == nil && (m != int64(int32(m)) || d != int64(int32(d))) {
			err = fmt.Errorf("%w: interval out of range", ErrBadEncoding)
		}
		return catalog.IntervalVal{Months: int32(m), Days: int32(d), Micros: us}, n, true, err
	}
	return nil, 0, false, nil
}

// appendKeyDatetime appends v's key encoding; ok is false for any other
// Go type.
func appendKeyDatetime(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case catalog.DateVal:
		dst = append(dst, keyDate)
		return binary.BigEndian.AppendUint32(dst, uint32(v)^(1<<31)), true
	case catalog.TimeOfDay:
		dst = append(dst, keyTimeOfDay)
		return binary.BigEndian.AppendUint64(dst, uint64(v)^signBit), true
	case catalog.IntervalVal:
		dst = append(dst, keyInterval)
		return binary.BigEndian.AppendUint64(dst, uint64(v.Span())^signBit), true
	}
	return dst, false
}

// decodeKeyDatetime decodes a key value of one of the three tags; ok is
// false for another tag.
func decodeKeyDatetime(tag byte, b []byte) (v any, rest []byte, ok bool, err error) {
	switch tag {
	case keyDate:
		if len(b) < 4 {
			return nil, nil, true, fmt.Errorf("%w: truncated date", ErrBadEncoding)
		}
		return catalog.DateVal(int32(binary.BigEndian.Uint32(b) ^ (1 << 31))), b[4:], true, nil
	case keyTimeOfDay, keyInterval:
		if len(b) < 8 {
			return nil, nil, true, fmt.Errorf("%w: truncated key value", ErrBadEncoding)
		}
		x := int64(binary.BigEndian.Uint64(b) ^ signBit)
		if tag == keyTimeOfDay {
			return catalog.TimeOfDay(x), b[8:], true, nil
		}
		return justified(x), b[8:], true, nil
	}
	return nil, nil, false, nil
}

// justified is the interval of span microseconds in justify_interval's
// form.
func justified(span int64) catalog.IntervalVal {
	const day = 24 * 3600 * 1_000_000
	const month = 30 * day
	m := span / month
	span -= m * month
	d := span / day
	return catalog.IntervalVal{Months: int32(m), Days: int32(d), Micros: span - d*day}
}
