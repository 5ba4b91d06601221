package pgcodec

import (
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	num "github.com/basindb/basin/internal/numeric"
)

// TestDecodePeer encodes values as a peer's wire would (pgx's own
// encoders, binary and text) and checks that DecodePeer reads back the
// values basin uses, and leaves what it does not know to pgx.
func TestDecodePeer(t *testing.T) {
	m := pgtype.NewMap()
	ts := time.Date(2026, 11, 29, 13, 4, 5, 123456000, time.UTC)
	for _, tc := range []struct {
		oid    uint32
		format int16
		in     any
		want   any
		ok     bool
	}{
		{pgtype.Int8OID, pgx.BinaryFormatCode, int64(-1 << 40), int64(-1 << 40), true},
		{pgtype.Int4OID, pgx.BinaryFormatCode, int32(-7), int64(-7), true},
		{pgtype.Int2OID, pgx.BinaryFormatCode, int16(300), int64(300), true},
		{pgtype.Float8OID, pgx.BinaryFormatCode, 1.5e300, 1.5e300, true},
		{pgtype.Float4OID, pgx.BinaryFormatCode, float32(0.25), 0.25, true},
		{pgtype.BoolOID, pgx.BinaryFormatCode, true, true, true},
		{pgtype.TextOID, pgx.BinaryFormatCode, "héllo", "héllo", true},
		{pgtype.VarcharOID, pgx.TextFormatCode, "eu", "eu", true},
		{pgtype.TimestampOID, pgx.BinaryFormatCode, ts, ts, true},
		{pgtype.TimestampOID, pgx.BinaryFormatCode, pgtype.Timestamp{InfinityModifier: pgtype.Infinity, Valid: true}, nil, false},
		{pgtype.Int8OID, pgx.TextFormatCode, int64(5), nil, false},
		{pgtype.NumericOID, pgx.BinaryFormatCode, pgtype.Numeric{Int: big.NewInt(150), Exp: -2, Valid: true}, num.Text(mustNumeric("1.50")), true},
		{pgtype.NumericOID, pgx.TextFormatCode, "-0.001", num.Text(mustNumeric("-0.001")), true},
	} {
		b, err := m.Encode(tc.oid, tc.format, tc.in, nil)
		if err != nil {
			t.Fatalf("encoding %v as %d: %v", tc.in, tc.oid, err)
		}
		got, ok := DecodePeer(tc.oid, tc.format, b)
		if d, isDec := got.(*apd.Decimal); isDec {
			got = num.Text(d)
		}
		if ok != tc.ok || (ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("%v as oid %d format %d: %#v %v, want %#v %v", tc.in, tc.oid, tc.format, got, ok, tc.want, tc.ok)
		}
	}
	if v, ok := DecodePeer(pgtype.Int8OID, pgx.BinaryFormatCode, nil); v != nil || !ok {
		t.Errorf("NULL: %v %v", v, ok)
	}
	if _, ok := DecodePeer(pgtype.TimestampOID, pgx.BinaryFormatCode, []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0}); ok {
		t.Error("a timestamp beyond time's range decoded")
	}
}

func mustNumeric(s string) *apd.Decimal {
	d, err := num.Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}
