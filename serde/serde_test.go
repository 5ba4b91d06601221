package serde

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

func ts(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05.999999", s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func col(name string, t catalog.Type) catalog.Column {
	return catalog.Column{Name: name, Type: t}
}

// sameValues compares decoded values, treating NaN as equal to NaN and
// times by instant.
func sameValues(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch x := a[i].(type) {
		case float64:
			y, ok := b[i].(float64)
			if !ok || !(x == y || (math.IsNaN(x) && math.IsNaN(y))) || math.Signbit(x) != math.Signbit(y) {
				return false
			}
		case time.Time:
			y, ok := b[i].(time.Time)
			if !ok || !x.Equal(y) || y.Location() != time.UTC {
				return false
			}
		case []any:
			y, ok := b[i].([]any)
			if !ok || !sameValues(x, y) {
				return false
			}
		case []byte:
			y, ok := b[i].([]byte)
			if !ok || !bytes.Equal(x, y) {
				return false
			}
		case *apd.Decimal:
			y, ok := b[i].(*apd.Decimal)
			if !ok || x.Cmp(y) != 0 || x.Exponent != y.Exponent {
				return false
			}
		default:
			if a[i] != b[i] {
				return false
			}
		}
	}
	return true
}

func TestSerdeKafkaKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  catalog.Type
		val  any
		hex  string
	}{
		// What Kafka's serializers write (and ksqlDB's KAFKA format).
		{"varchar", catalog.Varchar, "héllo", "68c3a96c6c6f"},
		{"empty varchar", catalog.Varchar, "", ""},
		{"int", catalog.Int, int64(42), "0000002a"},
		{"negative int", catalog.Int, int64(-2), "fffffffe"},
		{"int min", catalog.Int, int64(math.MinInt32), "80000000"},
		{"bigint", catalog.BigInt, int64(1) << 40, "0000010000000000"},
		{"negative bigint", catalog.BigInt, int64(-1), "ffffffffffffffff"},
		{"double", catalog.Double, 1.5, "3ff8000000000000"},
		{"negative zero", catalog.Double, math.Copysign(0, -1), "8000000000000000"},
		{"boolean true", catalog.Boolean, true, "01"},
		{"boolean false", catalog.Boolean, false, "00"},
		{"timestamp", catalog.Timestamp, ts("2024-01-02 03:04:05.678"), "0000018cc820db2e"},
		{"timestamp before 1970", catalog.Timestamp, ts("1969-12-31 23:59:59.999"), "ffffffffffffffff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := EncodeKey("kafka", []catalog.Type{tc.typ}, []string{"k"}, []any{tc.val})
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(b); got != tc.hex {
				t.Fatalf("EncodeKey = %s, want %s", got, tc.hex)
			}
			vals, err := decodeKey("kafka", []catalog.Column{col("k", tc.typ)}, b)
			if err != nil {
				t.Fatal(err)
			}
			if !sameValues(vals, []any{tc.val}) {
				t.Fatalf("decodeKey = %#v, want %#v", vals, tc.val)
			}
		})
	}

	// The default format is kafka.
	b, err := EncodeKey("", []catalog.Type{catalog.Int}, []string{"k"}, []any{int64(1)})
	if err != nil || hex.EncodeToString(b) != "00000001" {
		t.Errorf("EncodeKey(default format) = %x, %v", b, err)
	}
	// Timestamp keys keep milliseconds only.
	b, _ = EncodeKey("kafka", []catalog.Type{catalog.Timestamp}, []string{"k"}, []any{ts("2024-01-02 03:04:05.678999")})
	vals, _ := decodeKey("kafka", []catalog.Column{col("k", catalog.Timestamp)}, b)
	if !sameValues(vals, []any{ts("2024-01-02 03:04:05.678")}) {
		t.Errorf("timestamp key round trip = %v", vals)
	}
}

func TestSerdeNullAndEmptyKeys(t *testing.T) {
	for _, format := range []string{"kafka", "json"} {
		b, err := EncodeKey(format, []catalog.Type{catalog.Varchar}, []string{"k"}, []any{nil})
		if err != nil || b != nil {
			t.Errorf("%s: EncodeKey(NULL) = %q, %v; want nil", format, b, err)
		}
		b, err = EncodeKey(format, nil, nil, nil)
		if err != nil || b != nil {
			t.Errorf("%s: EncodeKey(no columns) = %q, %v; want nil", format, b, err)
		}
		vals, err := decodeKey(format, []catalog.Column{col("k", catalog.Int)}, nil)
		if err != nil || len(vals) != 1 || vals[0] != nil {
			t.Errorf("%s: decodeKey(nil) = %v, %v; want [NULL]", format, vals, err)
		}
		vals, err = decodeKey(format, nil, []byte("ignored"))
		if err != nil || len(vals) != 0 {
			t.Errorf("%s: decodeKey(no columns) = %v, %v", format, vals, err)
		}
	}
	two := []catalog.Type{catalog.Int, catalog.Varchar}
	b, err := EncodeKey("json", two, []string{"a", "b"}, []any{nil, nil})
	if err != nil || b != nil {
		t.Errorf("EncodeKey(json, all NULL) = %q, %v; want nil", b, err)
	}
	vals, err := decodeKey("json", []catalog.Column{col("a", catalog.Int), col("b", catalog.Varchar)}, []byte("null"))
	if err != nil || vals[0] != nil || vals[1] != nil {
		t.Errorf("decodeKey(json, null) = %v, %v", vals, err)
	}
}

func TestSerdeJSONKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cols  []catalog.Column
		vals  []any
		json  string
		extra []string // other encodings that decode to vals
	}{
		{"varchar", []catalog.Column{col("id", catalog.Varchar)}, []any{"a\"b"}, `"a\"b"`, []string{`{"ID": "a\"b"}`}},
		{"bigint", []catalog.Column{col("id", catalog.BigInt)}, []any{int64(-7)}, `-7`, []string{`"-7"`, ` -7 `, `{"id":-7}`}},
		{"double", []catalog.Column{col("x", catalog.Double)}, []any{0.25}, `0.25`, nil},
		{"boolean", []catalog.Column{col("b", catalog.Boolean)}, []any{true}, `true`, []string{`"TRUE"`}},
		{"timestamp", []catalog.Column{col("t", catalog.Timestamp)}, []any{ts("2024-01-02 03:04:05.678")}, `1704164645678`,
			[]string{`"2024-01-02T03:04:05.678Z"`, `"2024-01-02 03:04:05.678"`}},
		{"two columns", []catalog.Column{col("region", catalog.Varchar), col("n", catalog.Int)}, []any{"eu", int64(3)},
			`{"region":"eu","n":3}`, []string{`{"N":3,"REGION":"eu","other":1}`}},
		{"two columns, one NULL", []catalog.Column{col("region", catalog.Varchar), col("n", catalog.Int)}, []any{nil, int64(3)},
			`{"region":null,"n":3}`, []string{`{"n":3}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			types := make([]catalog.Type, len(tc.cols))
			names := make([]string, len(tc.cols))
			for i, c := range tc.cols {
				types[i], names[i] = c.Type, c.Name
			}
			b, err := EncodeKey("JSON", types, names, tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.json {
				t.Fatalf("EncodeKey = %s, want %s", b, tc.json)
			}
			for _, in := range append([]string{tc.json}, tc.extra...) {
				vals, err := decodeKey("json", tc.cols, []byte(in))
				if err != nil {
					t.Fatalf("decodeKey(%s): %v", in, err)
				}
				if !sameValues(vals, tc.vals) {
					t.Fatalf("decodeKey(%s) = %#v, want %#v", in, vals, tc.vals)
				}
			}
		})
	}
}

func TestSerdeKeyErrors(t *testing.T) {
	intCol := []catalog.Column{col("id", catalog.Int)}
	two := []catalog.Column{col("a", catalog.Int), col("b", catalog.Varchar)}
	for _, tc := range []struct {
		name   string
		format string
		cols   []catalog.Column
		key    string
		code   pgerr.Code
		msg    string
	}{
		{"short int", "kafka", intCol, "\x00\x01", pgerr.DataException,
			`key column "id": expected 4 bytes (a big-endian 32-bit INTEGER), found 2 bytes`},
		{"long bigint", "kafka", []catalog.Column{col("id", catalog.BigInt)}, "123456789", pgerr.DataException,
			`key column "id": expected 8 bytes (a big-endian 64-bit BIGINT), found 9 bytes`},
		{"empty int", "kafka", intCol, "", pgerr.DataException, `expected 4 bytes (a big-endian 32-bit INTEGER), found 0 bytes`},
		{"bad boolean", "kafka", []catalog.Column{col("b", catalog.Boolean)}, "\x02", pgerr.DataException,
			`key column "b": BOOLEAN key byte is 2, want 0 or 1`},
		{"bad utf8", "kafka", []catalog.Column{col("s", catalog.Varchar)}, "a\xffb", pgerr.DataException,
			`key column "s": key is not valid UTF-8 ("a\xffb")`},
		{"kafka multi-column", "kafka", two, "x", pgerr.FeatureNotSupported,
			`key_format 'kafka' supports a single key column, not 2 (a, b)`},
		{"unknown format", "avro", intCol, "x", pgerr.FeatureNotSupported, `key format "avro" is not supported`},
		{"json garbage", "json", intCol, "{x", pgerr.InvalidTextRepresentation, `key is not valid JSON: invalid character 'x'`},
		{"json type", "json", intCol, `"abc"`, pgerr.InvalidTextRepresentation,
			`key column "id": expected INTEGER, found JSON string "abc"`},
		{"json multi-column scalar", "json", two, `7`, pgerr.InvalidTextRepresentation,
			`key is not a JSON object (found JSON number "7"); a key of 2 columns is a JSON object with a field per column`},
		{"json field type", "json", two, `{"A": true}`, pgerr.InvalidTextRepresentation,
			`key field "A": expected INTEGER, found JSON boolean true`},
		{"json int range", "json", intCol, `2147483648`, pgerr.NumericValueOutOfRange,
			`key column "id": JSON number "2147483648" is out of range for INTEGER`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeKey(tc.format, tc.cols, []byte(tc.key))
			checkErr(t, err, tc.code, tc.msg)
		})
	}

	_, err := EncodeKey("kafka", []catalog.Type{catalog.Int, catalog.Int}, []string{"a", "b"}, []any{int64(1), int64(2)})
	checkErr(t, err, pgerr.FeatureNotSupported, "key_format 'kafka' supports a single key column, not 2 (a, b)")
	if pe, _ := pgerr.As(err); pe == nil || !strings.Contains(pe.Hint, "key_format = 'json'") {
		t.Errorf("multi-column kafka key error has no hint to use json: %#v", pe)
	}
	_, err = EncodeKey("kafka", []catalog.Type{catalog.Int}, []string{"a"}, []any{int64(1) << 40})
	checkErr(t, err, pgerr.NumericValueOutOfRange, `key column "a": 1099511627776 is out of range for INTEGER`)
	_, err = EncodeKey("kafka", []catalog.Type{catalog.Int}, []string{"a"}, []any{"1"})
	checkErr(t, err, pgerr.InternalError, `exec: column "a": a string is not a INTEGER value`)
	_, err = EncodeKey("json", []catalog.Type{catalog.Int}, []string{"a", "b"}, []any{int64(1)})
	checkErr(t, err, pgerr.InternalError, "exec: encode key: 1 types, 2 names and 1 values")
}

func checkErr(t *testing.T, err error, code pgerr.Code, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s %q", code, msg)
	}
	if got := pgerr.CodeOf(err); got != code {
		t.Errorf("error %q has code %s, want %s", err, got, code)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not contain %q", err, msg)
	}
}

var valueCols = []catalog.Column{
	col("customer", catalog.Varchar),
	col("qty", catalog.Int),
	col("total", catalog.BigInt),
	col("amount", catalog.Double),
	col("paid", catalog.Boolean),
	col("ts", catalog.Timestamp),
}

func TestSerdeDecodeJSONValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []any
	}{
		{"all types", `{"customer":"c1","qty":3,"total":9007199254740993,"amount":9.5,"paid":true,"ts":1704164645678}`,
			[]any{"c1", int64(3), int64(9007199254740993), 9.5, true, ts("2024-01-02 03:04:05.678")}},
		{"missing fields are NULL, extra ignored", `{"customer":"c1","nested":{"a":[1,2]},"x":null}`,
			[]any{"c1", nil, nil, nil, nil, nil}},
		{"explicit nulls", `{"customer":null,"qty":null,"total":null,"amount":null,"paid":null,"ts":null}`,
			[]any{nil, nil, nil, nil, nil, nil}},
		{"case-insensitive names (ksqlDB writes upper case)", `{"CUSTOMER":"c1","Qty":3}`,
			[]any{"c1", int64(3), nil, nil, nil, nil}},
		{"exact name wins over other cases", `{"QTY":1,"qty":2,"Qty":3}`,
			[]any{nil, int64(2), nil, nil, nil, nil}},
		{"numbers as strings", `{"qty":" 7 ","total":"-12","amount":"1e3","ts":"1704164645678"}`,
			[]any{nil, int64(7), int64(-12), 1000.0, nil, ts("2024-01-02 03:04:05.678")}},
		{"integral numbers in other notations", `{"qty":2.0,"total":1e18,"amount":-0}`,
			[]any{nil, int64(2), int64(1e18), math.Copysign(0, -1), nil, nil}},
		{"bigint extremes", `{"total":-9223372036854775808}`, []any{nil, nil, int64(math.MinInt64), nil, nil, nil}},
		{"int extremes", `{"qty":-2147483648}`, []any{nil, int64(math.MinInt32), nil, nil, nil, nil}},
		{"double underflow is zero", `{"amount":1e-400}`, []any{nil, nil, nil, 0.0, nil, nil}},
		{"non-finite doubles as strings", `{"amount":"NaN"}`, []any{nil, nil, nil, math.NaN(), nil, nil}},
		{"infinity", `{"amount":"-Infinity"}`, []any{nil, nil, nil, math.Inf(-1), nil, nil}},
		{"booleans as strings", `{"paid":"False"}`, []any{nil, nil, nil, nil, false, nil}},
		{"varchar from other JSON", `{"customer":12.50}`, []any{"12.50", nil, nil, nil, nil, nil}},
		{"varchar from object", `{"customer":{"a": [1, true]}}`, []any{`{"a": [1, true]}`, nil, nil, nil, nil, nil}},
		{"varchar escapes", `{"customer":"a\u00e9\n\"\\\ud83d\ude00"}`, []any{"aé\n\"\\😀", nil, nil, nil, nil, nil}},
		{"whitespace", " \n{ \"qty\" : 1 }\t", []any{nil, int64(1), nil, nil, nil, nil}},
		{"fractional epoch millis", `{"ts":1704164645678.123}`, []any{nil, nil, nil, nil, nil, ts("2024-01-02 03:04:05.678123")}},
		{"negative epoch millis", `{"ts":-1.5}`, []any{nil, nil, nil, nil, nil, ts("1969-12-31 23:59:59.9985")}},
		{"RFC 3339 with offset", `{"ts":"2024-01-02T04:04:05.5+01:00"}`, []any{nil, nil, nil, nil, nil, ts("2024-01-02 03:04:05.5")}},
		{"ISO without zone is UTC", `{"ts":"2024-01-02T03:04:05"}`, []any{nil, nil, nil, nil, nil, ts("2024-01-02 03:04:05")}},
		{"Postgres text", `{"ts":"2024-01-02 03:04:05.123456"}`, []any{nil, nil, nil, nil, nil, ts("2024-01-02 03:04:05.123456")}},
		{"Postgres timestamptz text", `{"ts":"2024-01-02 05:04:05+02"}`, []any{nil, nil, nil, nil, nil, ts("2024-01-02 03:04:05")}},
		{"nanoseconds truncated", `{"ts":"2024-01-02T03:04:05.1234569Z"}`, []any{nil, nil, nil, nil, nil, ts("2024-01-02 03:04:05.123456")}},
		{"date only", `{"ts":"2024-01-02"}`, []any{nil, nil, nil, nil, nil, ts("2024-01-02 00:00:00")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeJSONValue(valueCols, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !sameValues(got, tc.want) {
				t.Fatalf("decodeJSONValue(%s)\n got  %#v\n want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSerdeDecodeJSONValueErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		code pgerr.Code
		msg  string
	}{
		{"garbage", "\x00\x01garbage", pgerr.InvalidTextRepresentation,
			`value is not valid JSON: invalid character '\x00' looking for beginning of value (at byte 1 of 9: "\x00\x01garbage")`},
		{"empty", "", pgerr.InvalidTextRepresentation, "value is not valid JSON: it is empty"},
		{"truncated", `{"qty":1`, pgerr.InvalidTextRepresentation, "value is not valid JSON: unexpected end of JSON input"},
		{"trailing data", `{"qty":1} {}`, pgerr.InvalidTextRepresentation, "value is not valid JSON: invalid character '{' after top-level value"},
		{"array", `[1,2]`, pgerr.InvalidTextRepresentation, `value is not a JSON object (found JSON array "[1,2]")`},
		{"string", `"hi"`, pgerr.InvalidTextRepresentation, `value is not a JSON object (found JSON string "hi")`},
		{"null", `null`, pgerr.InvalidTextRepresentation, `value is not a JSON object (found null)`},
		{"int from string", `{"qty":"abc"}`, pgerr.InvalidTextRepresentation, `field "qty": expected INTEGER, found JSON string "abc"`},
		{"int from fraction", `{"QTY":1.5}`, pgerr.InvalidTextRepresentation,
			`field "QTY": expected INTEGER, found JSON number "1.5", which is not an integer`},
		{"int out of range", `{"qty":3000000000}`, pgerr.NumericValueOutOfRange,
			`field "qty": JSON number "3000000000" is out of range for INTEGER`},
		{"bigint out of range", `{"total":9223372036854775808}`, pgerr.NumericValueOutOfRange,
			`field "total": JSON number "9223372036854775808" is out of range for BIGINT`},
		{"bigint from bool", `{"total":true}`, pgerr.InvalidTextRepresentation, `field "total": expected BIGINT, found JSON boolean true`},
		{"int from underscored string", `{"qty":"1_000"}`, pgerr.InvalidTextRepresentation, `expected INTEGER, found JSON string "1_000"`},
		{"double out of range", `{"amount":1e400}`, pgerr.NumericValueOutOfRange, `field "amount": JSON number "1e400" is out of range for DOUBLE`},
		{"double from array", `{"amount":[1]}`, pgerr.InvalidTextRepresentation, `field "amount": expected DOUBLE, found JSON array "[1]"`},
		{"double from word", `{"amount":"lots"}`, pgerr.InvalidTextRepresentation, `field "amount": expected DOUBLE, found JSON string "lots"`},
		{"boolean from number", `{"paid":1}`, pgerr.InvalidTextRepresentation, `field "paid": expected BOOLEAN, found JSON number "1"`},
		{"boolean from word", `{"paid":"yes"}`, pgerr.InvalidTextRepresentation, `field "paid": expected BOOLEAN, found JSON string "yes"`},
		{"timestamp from word", `{"ts":"yesterday"}`, pgerr.InvalidDatetimeFormat,
			`field "ts": expected TIMESTAMP, found JSON string "yesterday" (want epoch milliseconds, RFC 3339 or 'YYYY-MM-DD HH:MM:SS[.ffffff]')`},
		{"timestamp from bad date", `{"ts":"2024-13-01 00:00:00"}`, pgerr.InvalidDatetimeFormat, `found JSON string "2024-13-01 00:00:00"`},
		{"timestamp out of range", `{"ts":1e300}`, pgerr.NumericValueOutOfRange,
			`field "ts": JSON number "1e300" is out of range for TIMESTAMP (epoch milliseconds)`},
		{"timestamp from object", `{"ts":{}}`, pgerr.InvalidTextRepresentation, `field "ts": expected TIMESTAMP, found JSON object "{}"`},
		{"ambiguous names", `{"Qty":1,"QTY":2}`, pgerr.InvalidTextRepresentation,
			`value has fields "QTY", "Qty" that all match column "qty"; field names match columns ignoring case`},
		{"long string is cut", `{"qty":"` + strings.Repeat("x", 100) + `"}`, pgerr.InvalidTextRepresentation,
			`found JSON string "` + strings.Repeat("x", 40) + `..."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeJSONValue(valueCols, []byte(tc.in))
			checkErr(t, err, tc.code, tc.msg)
		})
	}
}

func TestSerdeEncodeJSONValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals []any
		want string
	}{
		{"all types", []any{"c1", int64(3), int64(-9007199254740993), 9.5, true, ts("2024-01-02 03:04:05.678")},
			`{"customer":"c1","qty":3,"total":-9007199254740993,"amount":9.5,"paid":true,"ts":1704164645678}`},
		{"nulls", []any{nil, nil, nil, nil, nil, nil},
			`{"customer":null,"qty":null,"total":null,"amount":null,"paid":null,"ts":null}`},
		{"microseconds", []any{nil, nil, nil, nil, nil, ts("2024-01-02 03:04:05.678120")},
			`{"customer":null,"qty":null,"total":null,"amount":null,"paid":null,"ts":1704164645678.12}`},
		{"before 1970", []any{nil, nil, nil, nil, nil, ts("1969-12-31 23:59:59.9985")},
			`{"customer":null,"qty":null,"total":null,"amount":null,"paid":null,"ts":-1.5}`},
		{"non-finite doubles", []any{nil, nil, nil, math.NaN(), nil, nil},
			`{"customer":null,"qty":null,"total":null,"amount":"NaN","paid":null,"ts":null}`},
		{"string escapes", []any{"q\"\\\n\t\x01<é>\u2028\xff", nil, nil, nil, nil, nil},
			`{"customer":"q\"\\\n\t\u0001<é>\u2028\ufffd","qty":null,"total":null,"amount":null,"paid":null,"ts":null}`},
		{"small and large doubles", []any{nil, nil, nil, 1e-7, nil, nil},
			`{"customer":null,"qty":null,"total":null,"amount":1e-7,"paid":null,"ts":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := encodeJSONValue(valueCols, tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("encodeJSONValue\n got  %s\n want %s", b, tc.want)
			}
			if !json.Valid(b) {
				t.Fatalf("encodeJSONValue wrote invalid JSON: %s", b)
			}
			back, err := decodeJSONValue(valueCols, b)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]any(nil), tc.vals...)
			if s, ok := want[0].(string); ok {
				want[0] = strings.ToValidUTF8(s, "\uFFFD")
			}
			if !sameValues(back, want) {
				t.Fatalf("round trip = %#v, want %#v", back, want)
			}
		})
	}

	_, err := encodeJSONValue(valueCols, []any{1})
	checkErr(t, err, pgerr.InternalError, "exec: encode value: 6 columns and 1 values")
	_, err = encodeJSONValue([]catalog.Column{col("ts", catalog.Timestamp)}, []any{int64(1)})
	checkErr(t, err, pgerr.InternalError, `exec: column "ts": a int64 is not a TIMESTAMP value`)
}

// Doubles are written as encoding/json writes them.
func TestSerdeDoublesMatchEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.1, 1.5e-7, 1e-6, 123456789.125, 1e20, 1e21, 1.7976931348623157e308, 5e-324, -2.5e-10} {
		want, _ := json.Marshal(f)
		if got := appendJSONFloat(nil, f); !bytes.Equal(got, want) {
			t.Errorf("appendJSONFloat(%v) = %s, encoding/json writes %s", f, got, want)
		}
	}
}

// Strings are written as encoding/json writes them, minus its HTML
// escaping.
func TestSerdeStringsMatchEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "tab\there", "nul\x00", "\x7f", "emoji 😀", "\u2029", "bad \xc3\x28 utf8", "\"quoted\""} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if got := appendJSONString(nil, s); string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("appendJSONString(%q) = %s, encoding/json writes %s", s, got, want.String())
		}
	}
}

func TestSerdeRoundTripRandomish(t *testing.T) {
	// Every value encodeJSONValue writes decodes to itself, for values at
	// the edges of each type.
	edge := [][]any{
		{"", int64(math.MaxInt32), int64(math.MaxInt64), math.MaxFloat64, false, time.UnixMicro(math.MaxInt64 / 2).UTC()},
		{"\u0000", int64(math.MinInt32), int64(math.MinInt64), math.SmallestNonzeroFloat64, true, time.UnixMicro(-math.MaxInt64 / 2).UTC()},
		{"日本", int64(0), int64(1), math.Inf(1), nil, time.UnixMicro(1).UTC()},
		{nil, nil, nil, math.Copysign(0, -1), nil, time.UnixMicro(-1).UTC()},
	}
	for _, vals := range edge {
		b, err := encodeJSONValue(valueCols, vals)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeJSONValue(valueCols, b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if !sameValues(back, vals) {
			t.Errorf("round trip of %s = %#v, want %#v", b, back, vals)
		}
	}
}

func FuzzDecodeJSONValue(f *testing.F) {
	for _, s := range []string{
		`{"customer":"c1","qty":3,"total":9007199254740993,"amount":9.5,"paid":true,"ts":1704164645678}`,
		`{"CUSTOMER":null,"Qty":"7","amount":"NaN","ts":"2024-01-02 03:04:05.123456"}`,
		`{"qty":1e3,"total":-0,"ts":-1.5,"paid":"false"}`,
		`{"customer":{"nested":[1,2,{"x":"y"}]},"amount":1e400}`,
		`{"Qty":1,"QTY":2}`,
		`[1,2,3]`, `null`, `"str"`, ``, `{`, "\x00\xff", `{"customer":"\ud83d"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, err := decodeJSONValue(valueCols, b)
		if err != nil {
			if _, ok := pgerr.As(err); !ok {
				t.Fatalf("error without a SQLSTATE: %v", err)
			}
			return
		}
		// What decodes, encodes, and decodes to the same values.
		enc, err := encodeJSONValue(valueCols, vals)
		if err != nil {
			t.Fatalf("encode %#v: %v", vals, err)
		}
		back, err := decodeJSONValue(valueCols, enc)
		if err != nil {
			t.Fatalf("decode of re-encoded %s: %v", enc, err)
		}
		if !sameValues(back, vals) {
			t.Fatalf("%q decodes to %#v, re-encoded %s decodes to %#v", b, vals, enc, back)
		}
	})
}

func FuzzDecodeKey(f *testing.F) {
	for _, s := range []string{`{"region":"eu","n":3}`, `"x"`, `7`, "\x00\x00\x00\x07", `null`, `{"N":1e400}`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	cols := []catalog.Column{col("region", catalog.Varchar), col("n", catalog.Int)}
	types := []catalog.Type{catalog.Varchar, catalog.Int}
	names := []string{"region", "n"}
	f.Fuzz(func(t *testing.T, b []byte, multi bool) {
		format, cs, ts, ns := "json", cols, types, names
		if !multi {
			format, cs, ts, ns = "kafka", cols[1:], types[1:], names[1:]
		}
		vals, err := decodeKey(format, cs, b)
		if err != nil {
			return
		}
		enc, err := EncodeKey(format, ts, ns, vals)
		if err != nil {
			t.Fatalf("encode %#v: %v", vals, err)
		}
		back, err := decodeKey(format, cs, enc)
		if err != nil || !reflect.DeepEqual(back, vals) {
			t.Fatalf("%q decodes to %#v; re-encoded %q decodes to %#v, %v", b, vals, enc, back, err)
		}
	})
}

func BenchmarkDecodeJSONValue(b *testing.B) {
	in := []byte(`{"CUSTOMER":"c1","QTY":3,"TOTAL":900,"AMOUNT":9.5,"PAID":true,"TS":1704164645678,"OTHER":"x"}`)
	for b.Loop() {
		if _, err := decodeJSONValue(valueCols, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeJSONValue(b *testing.B) {
	vals := []any{"c1", int64(3), int64(900), 9.5, true, ts("2024-01-02 03:04:05.678")}
	for b.Loop() {
		if _, err := encodeJSONValue(valueCols, vals); err != nil {
			b.Fatal(err)
		}
	}
}

// jsonFieldCases are objects that stress how decodeJSONFields' scan
// matches encoding/json: names, duplicates, nesting, whitespace and every
// way of being invalid. The columns are mixedCols.
var jsonFieldCases = []string{
	`{}`, ` { } `, `{"qty":1}`, `{"qty":1,"qty":2}`, `{"QTY":1,"QTY":2}`, `{"QTY":1,"qty":2,"QTY":3}`,
	`{"Qty":1,"QTY":2}`, `{"Qty":null,"QTY":2}`, `{"Qty":1,"QTY":2,"qty":null}`, `{"q\u0074y":5}`, `{"Q\u0054Y":5}`,
	`{"\u212Aey":1}`, `{"key":1,"\u212Aey":2}`, `{"ＱＴＹ":1}`, `{"naïve":"x"}`, `{"NAÏVE":"x"}`, `{"Naïve":"x","NAÏVE":"y"}`,
	`{"ſtr":"x"}`, `{"str":"a","STR":"b"}`, `{"KEY":true}`, `{"Kelvin":1}`,
	`{"qty":{"a":[1,{"b":null}],"c":"}"},"str":[]}`, `{"str":{"a": [1, true]}}`, `{"str":[ ] }`, `{"str":{ }}`,
	"{\t\"qty\"\n:\r1 , \"str\" : \"x\" }", `{"str":"a\u00e9\n\"\\\ud83d\ude00"}`, `{"str":"\ud83d"}`, "{\"str\":\"\xff\xfe\"}",
	"{\"\xff\":1}", `{"qty":-0}`, `{"qty":0.5e-3}`, `{"qty":1E+2}`, `{"qty":"7"}`, `{"qty":true}`, `{"qty":false,"str":null}`,
	`{"qty":01}`, `{"qty":-}`, `{"qty":1.}`, `{"qty":.5}`, `{"qty":1e}`, `{"qty":+1}`, `{"qty":1,}`, `{,"qty":1}`,
	`{"qty"1}`, `{"qty":}`, `{"qty":1 "str":2}`, `{"qty":tru}`, `{"qty":truex}`, `{"qty":nul}`, `{"qty":[1,]}`,
	`{"qty":[1 2]}`, `{"qty":{"a"}}`, `{"qty":{1:2}}`, `{"str":"\x"}`, `{"str":"\u12"}`, `{"str":"\u12g4"}`, "{\"str\":\"a\x01\"}",
	"{\"st\x01r\":1}", `{"str":"abc`, `{"str`, `{"qty":1}}`, `{"qty":1} x`, `{"qty":1}]`, `{'qty':1}`, `{"qty":NaN}`,
	`{"qty":[[[[[[[[[[]]]]]]]]]]}`, `{"qty":1,"str":"x","other":{"deep":[1,2,3]},"KEY":"k"}`,
	`{"qty":1/2}`, `{"qty":"1"/}`, "{\"qty\":1\x00}", `{"":1}`, `{"\"":1}`, `{"qty":1e400}`, `{"qty":3000000000}`,
	`{"str":12.50}`, `{"KEY":{"x":1}}`,
	`{"k":1}`, `{"K":2,"k":3}`, `{"k":"x"}`, "{\"\u212a\":4}",
	`{"qty":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
	`{"qty":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	`{"qty":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
}

// mixedCols have names of both cases and beyond ASCII, as quoted
// identifiers may.
var mixedCols = []catalog.Column{
	col("qty", catalog.Int),
	col("str", catalog.Varchar),
	col("Key", catalog.Boolean),
	col("naïve", catalog.Varchar),
	col("\u212a", catalog.Int), // the Kelvin sign, whose lower case is k
}

// checkSameAsSlow checks that decodeJSONFields decodes raw exactly as the
// map-based decodeJSONFieldsSlow: values, error text and SQLSTATE.
func checkSameAsSlow(t *testing.T, cols []catalog.Column, in []byte) {
	t.Helper()
	raw := bytes.TrimSpace(in)
	if len(raw) == 0 || raw[0] != '{' {
		return
	}
	fast := make([]any, len(cols)+1)
	slow := make([]any, len(cols)+1)
	for i := range fast {
		fast[i], slow[i] = "garbage", "garbage" // every column must be set
	}
	idx := make([]int, len(cols))
	for i := range idx {
		idx[i] = len(cols) - i // reversed, past dst[0]
	}
	ferr := decodeJSONFields(fast, idx, cols, raw, "value", "field %q")
	serr := decodeJSONFieldsSlow(slow, idx, cols, raw, "value", "field %q")
	switch {
	case (ferr == nil) != (serr == nil):
		t.Fatalf("%q: fast error %v, slow error %v", in, ferr, serr)
	case ferr != nil:
		if ferr.Error() != serr.Error() || pgerr.CodeOf(ferr) != pgerr.CodeOf(serr) {
			t.Fatalf("%q: fast error %v (%s), slow error %v (%s)", in, ferr, pgerr.CodeOf(ferr), serr, pgerr.CodeOf(serr))
		}
	case !sameValues(fast, slow):
		t.Fatalf("%q: fast %#v, slow %#v", in, fast, slow)
	}
}

func TestSerdeJSONFieldsScanMatchesMap(t *testing.T) {
	for _, in := range jsonFieldCases {
		checkSameAsSlow(t, mixedCols, []byte(in))
		checkSameAsSlow(t, valueCols, []byte(in))
	}
	// More columns than the scan's stack buffer.
	var wide []catalog.Column
	var obj []string
	for i := range 40 {
		wide = append(wide, col(fmt.Sprintf("c%d", i), catalog.BigInt))
		obj = append(obj, fmt.Sprintf(`"C%d":%d`, 39-i, i))
	}
	checkSameAsSlow(t, wide, []byte("{"+strings.Join(obj, ",")+"}"))
	vals, err := decodeJSONValue(wide, []byte("{"+strings.Join(obj, ",")+"}"))
	if err != nil || vals[0] != int64(39) || vals[39] != int64(0) {
		t.Fatalf("wide object: %v, %v", vals, err)
	}
}

// The scan takes objects without a map or per-field copies.
func TestSerdeDecodeJSONValueAllocs(t *testing.T) {
	cols := []catalog.Column{col("grp", catalog.BigInt), col("amount", catalog.BigInt), col("note", catalog.Varchar)}
	in := []byte(`{"grp":12345,"amount":345,"other":{"x":[1,2]},"note":null}`)
	dst := make([]any, len(cols))
	allocs := testing.AllocsPerRun(100, func() {
		if err := decodeJSONValueInto(dst, nil, cols, in); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 { // the two boxed int64s
		t.Errorf("decoding %s allocates %v times, want at most 2", in, allocs)
	}
}

func FuzzDecodeJSONFields(f *testing.F) {
	for _, s := range jsonFieldCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSameAsSlow(t, mixedCols, b)
		checkSameAsSlow(t, valueCols, b)
	})
}

func TestJSONBlobColumns(t *testing.T) {
	cols := []catalog.Column{{Name: "id", Type: catalog.UUID}, {Name: "payload", Type: catalog.JSONB},
		{Name: "doc", Type: catalog.JSON}, {Name: "raw", Type: catalog.Bytea}}
	in := `{"id": "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "payload": {"b": [1, 2.50], "a": "x"}, "doc": [1,  {"z":1}], "raw": "AQL/"}`
	vals, err := decodeJSONValue(cols, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{catalog.UUIDVal{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11},
		catalog.JSONText(`{"a": "x", "b": [1, 2.50]}`), catalog.JSONText(`[1,  {"z":1}]`), []byte{1, 2, 0xff}}
	if !reflect.DeepEqual(vals, want) {
		t.Fatalf("decoded %#v, want %#v", vals, want)
	}
	out, err := encodeJSONValue(cols, vals)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != `{"id":"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11","payload":{"a": "x", "b": [1, 2.50]},"doc":[1,  {"z":1}],"raw":"AQL/"}` {
		t.Errorf("encoded %s", got)
	}
	for _, bad := range []string{`{"id": "nope"}`, `{"id": 5}`, `{"raw": "!!"}`} {
		if _, err := decodeJSONValue(cols, []byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	key, err := EncodeKey("kafka", []catalog.Type{catalog.Bytea}, []string{"k"}, []any{[]byte{0, 1}})
	if err != nil || string(key) != "\x00\x01" {
		t.Errorf("bytea key = %q, %v", key, err)
	}
	if _, err := EncodeKey("kafka", []catalog.Type{catalog.JSONB}, []string{"k"}, []any{catalog.JSONText("{}")}); err == nil {
		t.Error("a jsonb key encoded")
	}
	back, err := decodeKey("kafka", []catalog.Column{{Name: "k", Type: catalog.UUID}}, []byte("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))
	if err != nil || back[0] != want[0] {
		t.Errorf("uuid key = %v, %v", back, err)
	}
}

// A view's array columns (array_agg, collect_list, topk) are written as
// JSON arrays of their elements.
func TestSerdeEncodesArrays(t *testing.T) {
	cols := []catalog.Column{col("tags", catalog.ArrayOf(catalog.Varchar)), col("ns", catalog.ArrayOf(catalog.BigInt)), col("none", catalog.ArrayOf(catalog.Double)), col("empty", catalog.ArrayOf(catalog.Int))}
	b, err := encodeJSONValue(cols, []any{[]any{"a", nil, `q"`}, []any{int64(3), int64(-1)}, nil, []any{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tags":["a",null,"q\""],"ns":[3,-1],"none":null,"empty":[]}`; string(b) != want {
		t.Fatalf("encoded %s, want %s", b, want)
	}
	_, err = encodeJSONValue(cols[1:2], []any{[]any{"x"}})
	checkErr(t, err, pgerr.InternalError, `exec: column "ns": a string is not a BIGINT value`)
}
