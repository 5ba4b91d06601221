package serde

import (
	"encoding/base64"
	"fmt"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

// uuid, jsonb, json and bytea in records.
//
// JSON records: a JSONB or JSON column takes whatever JSON value its
// field holds (object, array, string, number, boolean) and is written
// back as that JSON, embedded, not as a string; a JSON null is SQL NULL,
// as for every column. A UUID is a string in any form Postgres reads; a
// BYTEA is base64 text, as ksqlDB writes BYTES.
//
// KAFKA keys: a BYTEA key is its raw bytes (ksqlDB's BYTES, Kafka's
// ByteArraySerializer), a UUID key its 36-character text (what Kafka's
// UUIDSerializer writes). json and jsonb cannot be keys.

func isBlobType(t catalog.Type) bool {
	return t == catalog.UUID || t == catalog.JSONB || t == catalog.JSON || t == catalog.Bytea
}

// decodeJSONBlob converts a valid, non-null JSON value of a record to a
// value of t, one of this file's types.
func decodeJSONBlob(raw []byte, t catalog.Type) (any, *convError) {
	switch t {
	case catalog.JSONB:
		c, err := jsonb.Canonical(string(raw))
		if err != nil {
			return nil, &convError{pgerr.InvalidTextRepresentation, fmt.Sprintf("%s is not a jsonb value: %v", describeJSON(raw), err)}
		}
		return catalog.JSONText(c), nil
	case catalog.JSON:
		return catalog.JSONText(raw), nil
	case catalog.UUID:
		if raw[0] != '"' {
			return nil, mismatch(t, raw)
		}
		u, err := pgcodec.ParseUUID(jsonString(raw))
		if err != nil {
			return nil, &convError{pgerr.InvalidTextRepresentation, fmt.Sprintf("expected UUID, found %s", describeJSON(raw))}
		}
		return u, nil
	case catalog.Bytea:
		if raw[0] != '"' {
			return nil, mismatch(t, raw)
		}
		b, err := base64.StdEncoding.DecodeString(jsonString(raw))
		if err != nil {
			return nil, &convError{pgerr.InvalidTextRepresentation, fmt.Sprintf("expected BYTEA as base64 text, found %s", describeJSON(raw))}
		}
		return b, nil
	}
	return nil, &convError{pgerr.FeatureNotSupported, fmt.Sprintf("type %s cannot be read from JSON", t)}
}

// appendJSONBlob appends v, a non-NULL value of one of this file's
// types, as JSON.
func appendJSONBlob(buf []byte, t catalog.Type, name string, v any) ([]byte, error) {
	switch x := v.(type) {
	case catalog.JSONText:
		if t == catalog.JSONB || t == catalog.JSON {
			return append(buf, x...), nil
		}
	case catalog.UUIDVal:
		if t == catalog.UUID {
			return appendJSONString(buf, pgcodec.FormatUUID(x)), nil
		}
	case []byte:
		if t == catalog.Bytea {
			return appendJSONString(buf, base64.StdEncoding.EncodeToString(x)), nil
		}
	}
	return nil, badGoValue(name, t, v)
}

// appendKafkaKeyBlob is appendKafkaKey for uuid and bytea keys.
func appendKafkaKeyBlob(dst []byte, part string, t catalog.Type, name string, v any) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		if t == catalog.Bytea {
			return append(dst, x...), nil
		}
	case catalog.UUIDVal:
		if t == catalog.UUID {
			return append(dst, pgcodec.FormatUUID(x)...), nil
		}
	}
	if t == catalog.JSONB || t == catalog.JSON {
		return dst, pgerr.New(pgerr.FeatureNotSupported, "%s column %q has type %s, which %s_format 'kafka' cannot hold", part, name, t, part)
	}
	return dst, badGoValue(name, t, v)
}

// decodeKafkaKeyBlob is decodeKafkaKey for uuid and bytea keys.
func decodeKafkaKeyBlob(c catalog.Column, part string, b []byte) (any, error) {
	switch c.Type {
	case catalog.Bytea:
		return append([]byte{}, b...), nil
	case catalog.UUID:
		u, err := pgcodec.ParseUUID(string(b))
		if err != nil {
			return nil, pgerr.New(pgerr.DataException, "%s column %q: %s %s is not a UUID", part, c.Name, part, snippet(b)).
				WithHint("%s_format 'kafka' reads a UUID %s as its text, as Kafka's UUIDSerializer writes it.", part, part)
		}
		return u, nil
	}
	return nil, pgerr.New(pgerr.FeatureNotSupported, "%s column %q has type %s, which %s_format 'kafka' cannot hold", part, c.Name, c.Type, part)
}
