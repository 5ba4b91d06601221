package srfake

import (
	"fmt"
	"net/http"
	"strings"
)

// levels are the compatibility levels the registry knows.
var levels = []string{
	"NONE",
	"BACKWARD", "BACKWARD_TRANSITIVE",
	"FORWARD", "FORWARD_TRANSITIVE",
	"FULL", "FULL_TRANSITIVE",
}

func validLevel(l string) bool {
	for _, x := range levels {
		if x == l {
			return true
		}
	}
	return false
}

// checkLocked checks a candidate schema against a subject's versions (in
// ascending order) under level and returns why it is incompatible, nothing
// when it is compatible.
//
// BACKWARD means the new schema can read data written with the old one,
// FORWARD that the old one can read data written with the new one, FULL
// both. A level without _TRANSITIVE checks against the newest version only,
// unless all is set (as the compatibility endpoint without a version
// does). Avro schemas are checked by Avro's schema resolution rules
// (hamba/avro's SchemaCompatibility). Protobuf and JSON schemas are only
// checked to be of the same type as the old one: anything else of the same
// type is accepted.
//
// mu must be held.
func (r *Registry) checkLocked(level string, c *candidate, against []*version, all bool) ([]string, *apiError) {
	if level == "NONE" || len(against) == 0 {
		return nil, nil
	}
	if !all && !strings.HasSuffix(level, "_TRANSITIVE") {
		against = against[len(against)-1:]
	}
	base := strings.TrimSuffix(level, "_TRANSITIVE")
	backward := base == "BACKWARD" || base == "FULL"
	forward := base == "FORWARD" || base == "FULL"
	var msgs []string
	for _, v := range against {
		old := r.schemaLocked(v.id)
		if old.typ != c.typ {
			msgs = append(msgs, fmt.Sprintf("version %d is a %s schema, the new one is %s", v.version, old.typ, c.typ))
			continue
		}
		if c.typ != typeAvro {
			continue
		}
		oldAvro, err := r.parseAvroLocked(old.text, old.refs)
		if err != nil {
			// It parsed when it was registered; a reference since hard
			// deleted is the only way here.
			return nil, newError(http.StatusInternalServerError, codeStore,
				"srfake: version %d of the subject no longer parses: %v", v.version, err)
		}
		if backward {
			if err := r.compat.Compatible(c.avro, oldAvro); err != nil {
				msgs = append(msgs, fmt.Sprintf("BACKWARD: the new schema cannot read data written with version %d: %v", v.version, err))
			}
		}
		if forward {
			if err := r.compat.Compatible(oldAvro, c.avro); err != nil {
				msgs = append(msgs, fmt.Sprintf("FORWARD: version %d cannot read data written with the new schema: %v", v.version, err))
			}
		}
	}
	return msgs, nil
}

func joinMessages(msgs []string) string { return strings.Join(msgs, "; ") }
