package eval

import (
	"testing"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
)

// TestBlobOperators evaluates the json operators and functions and the
// uuid and bytea ones over constants; the expected texts are Postgres
// 15's output.
func TestBlobOperators(t *testing.T) {
	for expr, want := range map[string]string{
		`'{"a": {"b": [1, "x"]}}'::jsonb -> 'a' -> 'b' ->> 1`:                                   "x",
		`'{"a": {"b": [1, "x"]}}'::jsonb #> '{a,b,0}'`:                                          "1",
		`'{"a": {"b": [1, "x"]}}'::jsonb #>> '{a}'`:                                             `{"b": [1, "x"]}`,
		`'[1, 2, 3]'::jsonb -> -1`:                                                              "3",
		`'{"a": 1}'::json -> 'a'`:                                                               "1",
		`'{"a": [1,  2]}'::json ->> 'a'`:                                                        "[1,  2]",
		`'{"a": 1, "b": [2]}'::jsonb @> '{"b": [2]}'`:                                           "true",
		`'{"a": 1}'::jsonb <@ '{"a": 1, "b": 2}'`:                                               "true",
		`'["a", "b"]'::jsonb ? 'b'`:                                                             "true",
		`'{"a": 1}'::jsonb ?| '{x,a}'`:                                                          "true",
		`'{"a": 1}'::jsonb ?& '{x,a}'`:                                                          "false",
		`'{"a": 1}'::jsonb || '{"a": 2, "b": 3}'`:                                               `{"a": 2, "b": 3}`,
		`'[1]'::jsonb || '2'::jsonb`:                                                            "[1, 2]",
		`'\x01'::bytea || '\xff'::bytea`:                                                        `\x01ff`,
		`'{"b": 1, "a": 2}'::jsonb = '{"a": 2.0, "b": 1}'`:                                      "true",
		`'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid < 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'`: "true",
		`jsonb_typeof('{"a": [1]}'::jsonb -> 'a')`:                                              "array",
		`jsonb_extract_path_text('{"a": {"b": "c"}}', 'a', 'b')`:                                "c",
		`jsonb_build_object('b', 1, 'a', s, 'c', NULL)`:                                         `{"a": "abc", "b": 1, "c": null}`,
		`json_build_array(1, s, d)`:                                                             `[1, "abc", 1.5]`,
		`to_jsonb(ts)`:                                                                          `"2024-01-02T03:04:05"`,
		`to_json(i)`:                                                                            "10",
		`'{"a": 1, "b": 2}'::jsonb - 'a'`:                                                       `{"b": 2}`,
		`'["a", "b", "a", 1]'::jsonb - 'a'`:                                                     `["b", 1]`,
		`'[1, 2, 3]'::jsonb - -1`:                                                               "[1, 2]",
		`'[1, 2]'::jsonb - 5`:                                                                   "[1, 2]",
		`'{"a": {"b": [1, 2]}}'::jsonb #- '{a,b,0}'`:                                            `{"a": {"b": [2]}}`,
		`'{"a": 1}'::jsonb #- '{x,y}'`:                                                          `{"a": 1}`,
		`md5('abc')`:                                                                            "900150983cd24fb0d6963f7d28e17f72",
		`encode('\x0102ff'::bytea, 'base64')`:                                                   "AQL/",
		`decode('AQL/', 'base64')`:                                                              `\x0102ff`,
		`length('\x0102'::bytea)`:                                                               "2",
		`('{"n": 2.5}'::jsonb -> 'n')::bigint`:                                                  "3",
		`('{"n": true}'::jsonb -> 'n')::boolean`:                                                "true",
	} {
		v, err := evalExpr(t, expr, rowA)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		var got string
		if b, ok := v.([]byte); ok {
			got = pgcodec.FormatBytea(b)
		} else {
			got = planner.FormatValue(v)
		}
		if got != want {
			t.Errorf("%s = %s, want %s", expr, got, want)
		}
	}
	for expr, code := range map[string]pgerr.Code{
		`'{"a": 1}'::json = '{"a": 1}'::json`: pgerr.UndefinedFunction,
		`'{"a": 1}' -> 'a'`:                   pgerr.AmbiguousFunction,
		`'"x"'::jsonb::integer`:               pgerr.InvalidParameterValue,
		`'[1]'::jsonb -> 1.5`:                 pgerr.UndefinedFunction,
		`s::uuid`:                             pgerr.InvalidTextRepresentation,
		`i::jsonb`:                            pgerr.CannotCoerce,
		`jsonb_array_length('1')`:             pgerr.InvalidParameterValue,
		`'1'::jsonb - 'a'`:                    pgerr.InvalidParameterValue,
		`'{"a": 1}'::jsonb - 0`:               pgerr.InvalidParameterValue,
		`'1'::jsonb #- '{a}'`:                 pgerr.InvalidParameterValue,
		`'[1]'::jsonb #- '{x}'`:               pgerr.InvalidTextRepresentation,
		`'{"a": 1}'::json - 'a'`:              pgerr.UndefinedFunction,
	} {
		if _, err := evalExpr(t, expr, rowA); pgerr.CodeOf(err) != code {
			t.Errorf("%s: %v, want %s", expr, err, code)
		}
	}
}
