package serde

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/cockroachdb/apd/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

// The message types of Protobuf values that are not messages of their
// own: a timestamp, a date, a time of day, a decimal, and the wrappers of
// a nullable scalar. Each is recognized by its full name, whatever file
// defined it, so a schema that brings its own copy reads the same.
//
// Besides google/protobuf/*.proto (protoc's own, protocompile has them),
// the schema registry gives every Protobuf schema a few more files
// without a reference, and ksqlDB's schemas import them: confluent's
// decimal and field metadata, and the common google.type messages.
// builtinProtoSources defines those basin reads, written here from their
// field numbers (the wire contract): enough to compile a schema that
// imports them and to read their values. A schema importing another
// file the registry knows (google/type/money.proto, ...) does not
// compile: see ParseProtobufSchema.
var builtinProtoSources = map[string]string{
	"confluent/meta.proto": `syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
// Meta annotates a schema's elements; ksqlDB puts a decimal's precision
// and scale in a field's params.
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
`,
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;
// Decimal is value × 10^-scale, value a big-endian two's complement
// integer.
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
`,
	"google/type/date.proto": `syntax = "proto3";
package google.type;
message Date {
  int32 year = 1;
  int32 month = 2;
  int32 day = 3;
}
`,
	"google/type/timeofday.proto": `syntax = "proto3";
package google.type;
message TimeOfDay {
  int32 hours = 1;
  int32 minutes = 2;
  int32 seconds = 3;
  int32 nanos = 4;
}
`,
}

// Full names of the message types of builtinProtoSources and protoc's
// well-known types that carry one value.
const (
	protoTimestamp = "google.protobuf.Timestamp"
	protoDate      = "google.type.Date"
	protoTimeOfDay = "google.type.TimeOfDay"
	protoDecimal   = "confluent.type.Decimal"
)

// isProtoWrapper reports whether a message type is one of
// google/protobuf/wrappers.proto's: a scalar in field 1, "value", so
// that proto3 could tell it unset.
func isProtoWrapper(md protoreflect.MessageDescriptor) bool {
	if md.ParentFile() == nil || md.ParentFile().Package() != "google.protobuf" ||
		!strings.HasSuffix(string(md.Name()), "Value") || md.Fields().Len() != 1 {
		return false
	}
	f := md.Fields().Get(0)
	return f.Name() == "value" && f.Cardinality() != protoreflect.Repeated && f.Message() == nil
}

// builtinProtoFiles compiles builtinProtoSources once.
var builtinProtoFiles = sync.OnceValues(func() (map[string]protoreflect.FileDescriptor, error) {
	paths := make([]string, 0, len(builtinProtoSources))
	for p := range builtinProtoSources {
		paths = append(paths, p)
	}
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(builtinProtoSources)}),
		MaxParallelism: 1,
	}
	files, err := c.Compile(context.Background(), paths...)
	if err != nil {
		return nil, fmt.Errorf("serde: the built-in Protobuf files do not compile: %w", err)
	}
	out := make(map[string]protoreflect.FileDescriptor, len(files))
	for _, f := range files {
		out[f.Path()] = f
	}
	return out, nil
})

// ---- writing ----

// setProtoMessage fills msg, a message of a type above, with v, a
// non-NULL value of column c; ok is false when msg is of another type.
func setProtoMessage(msg protoreflect.Message, c catalog.Column, v any) (ok bool, err error) {
	md := msg.Descriptor()
	fields := md.Fields()
	// The fields are set by name and of whatever integer kind the
	// schema gives them: a copy of these types of another shape must not
	// make Set panic.
	setInt := func(name string, n int64) {
		if fd := fields.ByName(protoreflect.Name(name)); fd != nil && !fd.IsList() {
			if x, ok := protoIntValue(fd.Kind(), n); ok {
				msg.Set(fd, x)
			}
		}
	}
	switch md.FullName() {
	case protoTimestamp:
		ts, ok := v.(time.Time)
		if !ok {
			return true, protoMismatch(c, v, md.FullName())
		}
		if y := ts.UTC().Year(); y < 1 || y > 9999 {
			return true, pgerr.New(pgerr.DatetimeFieldOverflow, "column %q: %s is out of range for a Protobuf timestamp (years 1 to 9999)", c.Name, ts.UTC().Format(time.RFC3339Nano))
		}
		setInt("seconds", ts.Unix())
		setInt("nanos", int64(ts.Nanosecond()))
		return true, nil
	case protoDate:
		d, ok := v.(catalog.DateVal)
		if !ok {
			return true, protoMismatch(c, v, md.FullName())
		}
		y, m, day := d.Time().Date()
		if y < 1 || y > 9999 {
			return true, pgerr.New(pgerr.DatetimeFieldOverflow, "column %q: %s is out of range for a Protobuf date (years 1 to 9999)", c.Name, pgcodec.AppendDate(nil, d))
		}
		setInt("year", int64(y))
		setInt("month", int64(m))
		setInt("day", int64(day))
		return true, nil
	case protoTimeOfDay:
		t, ok := v.(catalog.TimeOfDay)
		if !ok {
			return true, protoMismatch(c, v, md.FullName())
		}
		us := int64(t)
		setInt("hours", us/3_600_000_000)
		setInt("minutes", us/60_000_000%60)
		setInt("seconds", us/1_000_000%60)
		setInt("nanos", us%1_000_000*1000)
		return true, nil
	case protoDecimal:
		d, ok := v.(*apd.Decimal)
		if !ok {
			return true, protoMismatch(c, v, md.FullName())
		}
		if d.Form != apd.Finite {
			return true, pgerr.New(pgerr.InvalidParameterValue, "column %q: %s cannot be written as a Protobuf decimal, which has no NaN or infinity", c.Name, d.Text('f'))
		}
		unscaled := d.Coeff.MathBigInt()
		if d.Negative {
			unscaled.Neg(unscaled)
		}
		if fd := fields.ByName("value"); fd != nil && fd.Kind() == protoreflect.BytesKind && !fd.IsList() {
			msg.Set(fd, protoreflect.ValueOfBytes(appendTwosComplement(nil, unscaled)))
		}
		if c.Precision > 0 {
			setInt("precision", int64(c.Precision))
		}
		setInt("scale", int64(-d.Exponent))
		return true, nil
	}
	if isProtoWrapper(md) {
		fd := fields.Get(0)
		x, err := protoScalar(fd, c, v)
		if err != nil {
			return true, err
		}
		msg.Set(fd, x)
		return true, nil
	}
	return false, nil
}

// protoIntValue is n as a value of integer kind k; ok is false for
// another kind. n is in range for the fields it is used for.
func protoIntValue(k protoreflect.Kind, n int64) (v protoreflect.Value, ok bool) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(n)), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(n), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n)), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n)), true
	}
	return protoreflect.Value{}, false
}

// appendTwosComplement appends x as the big-endian two's complement
// bytes Java's BigInteger.toByteArray writes: the fewest that hold it
// and its sign.
func appendTwosComplement(dst []byte, x *big.Int) []byte {
	if x.Sign() >= 0 {
		b := x.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			dst = append(dst, 0)
		}
		return append(dst, b...)
	}
	// -x-1 has the bits of x inverted.
	y := new(big.Int).Neg(x)
	y.Sub(y, big.NewInt(1))
	b := y.Bytes()
	if len(b) == 0 || b[0]&0x80 != 0 {
		b = append([]byte{0}, b...)
	}
	for i := range b {
		b[i] ^= 0xff
	}
	return append(dst, b...)
}

// ---- reading ----

// Limits on what a decimal in a record may hold: Postgres's NUMERIC
// limits on its scale, and a coefficient of at most 1000 bytes (about
// 2400 digits). A record beyond them is refused, not expanded into
// megabytes of zeros.
const (
	maxProtoDecimalScale = 1000
	maxProtoDecimalBytes = 1000
)

// protoMessageValue is the value of msg, a message of a type above, as
// fromProto takes it; ok is false for another type. A wrapper with no
// value is NULL.
func protoMessageValue(msg protoreflect.Message) (v any, ok bool, err error) {
	md := msg.Descriptor()
	fields := md.Fields()
	getInt := func(name string) int64 {
		if fd := fields.ByName(protoreflect.Name(name)); fd != nil && !fd.IsList() && isProtoInteger(fd.Kind()) {
			return protoInt(msg.Get(fd), fd.Kind())
		}
		return 0
	}
	switch md.FullName() {
	case protoTimestamp:
		sec, nanos := getInt("seconds"), getInt("nanos")
		// The range a Timestamp may hold: years 1 to 9999.
		if sec < -62135596800 || sec > 253402300799 || nanos < 0 || nanos > 999_999_999 {
			return nil, true, pgerr.New(pgerr.DatetimeFieldOverflow, "%s %d seconds, %d nanoseconds is out of range", md.FullName(), sec, nanos)
		}
		return time.Unix(sec, nanos).UTC(), true, nil
	case protoDate:
		y, m, d := getInt("year"), getInt("month"), getInt("day")
		t := time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC)
		if y < 1 || y > 9999 || t.Year() != int(y) || int64(t.Month()) != m || int64(t.Day()) != d {
			return nil, true, pgerr.New(pgerr.DatetimeFieldOverflow, "%s %d-%d-%d is not a date (a year without a month or day is not read)", md.FullName(), y, m, d)
		}
		return t, true, nil
	case protoTimeOfDay:
		h, m, s, ns := getInt("hours"), getInt("minutes"), getInt("seconds"), getInt("nanos")
		d := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(ns)
		if h < 0 || h > 24 || m < 0 || m > 59 || s < 0 || s > 59 || ns < 0 || ns > 999_999_999 || d > 24*time.Hour {
			return nil, true, pgerr.New(pgerr.DatetimeFieldOverflow, "%s %02d:%02d:%02d.%09d is not a time of day", md.FullName(), h, m, s, ns)
		}
		return d, true, nil
	case protoDecimal:
		var raw []byte
		if fd := fields.ByName("value"); fd != nil && !fd.IsList() && fd.Kind() == protoreflect.BytesKind {
			raw = msg.Get(fd).Bytes()
		}
		scale := getInt("scale")
		if len(raw) > maxProtoDecimalBytes || scale < -maxProtoDecimalScale || scale > maxProtoDecimalScale {
			return nil, true, pgerr.New(pgerr.NumericValueOutOfRange, "%s of %d bytes, scale %d, is beyond a NUMERIC's limits", md.FullName(), len(raw), scale)
		}
		return json.Number(decimalText(raw, int(scale))), true, nil
	}
	if isProtoWrapper(md) {
		fd := fields.Get(0)
		if !msg.Has(fd) && fd.HasPresence() {
			return nil, true, nil
		}
		v, err := protoScalarValue(fd, msg.Get(fd))
		return v, true, err
	}
	return nil, false, nil
}

// decimalText is the decimal text of unscaled × 10^-scale, unscaled
// big-endian two's complement: exact, in plain notation, so the JSON
// reader's NUMERIC conversion keeps every digit and the scale.
func decimalText(unscaled []byte, scale int) string {
	x := new(big.Int).SetBytes(unscaled)
	if len(unscaled) > 0 && unscaled[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(unscaled))))
	}
	neg := x.Sign() < 0
	digits := x.Abs(x).String()
	if scale < 0 {
		digits += strings.Repeat("0", -scale)
		scale = 0
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	s := digits
	if scale > 0 {
		s = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// protoJSON is a message of another type as JSON, which a VARCHAR, JSON
// or JSONB column takes as the JSON reader does a nested object.
func protoJSON(msg protoreflect.Message) (json.RawMessage, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg.Interface())
	if err != nil {
		return nil, pgerr.New(pgerr.InvalidTextRepresentation, "message %s has no JSON form: %v", msg.Descriptor().FullName(), err)
	}
	return b, nil
}
