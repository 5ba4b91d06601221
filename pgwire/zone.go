package pgwire

import (
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/pgcodec"
)

// sessionZone is the session's TimeZone, for parameters read in it.
func (c *conn) sessionZone() *time.Location {
	if c.sess == nil {
		return nil
	}
	loc, _ := pgcodec.ParseZone(c.sess.ParameterStatus()["TimeZone"])
	return loc
}

// syncZone reads the session's TimeZone, which TIMESTAMPTZ values are
// written in, when a result starts: a SET TIME ZONE earlier in the same
// Query or pipeline applies to the results after it. The zone is parsed
// again only when its name changed.
func (r *resultWriter) syncZone() {
	r.zoned = false
	for _, t := range r.types {
		if t == catalog.TimestampTZ || t.IsArray() && t.Elem() == catalog.TimestampTZ {
			r.zoned = true
		}
	}
	if !r.zoned || r.c == nil || r.c.sess == nil {
		return
	}
	name := r.c.sess.ParameterStatus()["TimeZone"]
	if name == r.zoneName && r.loc != nil {
		return
	}
	r.zoneName = name
	r.loc, _ = pgcodec.ParseZone(name) // nil (UTC) for a name the session would not have taken
}
