package node

import (
	"encoding/hex"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/pgcodec"
)

// blobText is the Postgres text output of a uuid, jsonb, json or bytea
// column's raw value, which logic files show as psql does (pgx would
// decode jsonb into a map and lose its order). ok is false for other
// types and for NULL.
func blobText(fd pgconn.FieldDescription, raw []byte) (string, bool) {
	if raw == nil {
		return "", false
	}
	if fd.Format == pgcodec.FormatText {
		switch fd.DataTypeOID {
		case 2950, 3802, 114, 17:
			return string(raw), true
		}
		return "", false
	}
	switch fd.DataTypeOID {
	case 2950:
		if len(raw) == 16 {
			return pgcodec.FormatUUID(catalog.UUIDVal(raw)), true
		}
	case 3802:
		if len(raw) > 0 {
			return string(raw[1:]), true
		}
	case 114:
		return string(raw), true
	case 17:
		return `\x` + hex.EncodeToString(raw), true
	}
	return "", false
}
