package exec

import (
	"fmt"
	"time"

	"github.com/basindb/basin/internal/pgerr"
)

// produceError is the error of an INSERT whose records the broker did not
// take (since started). A write that failed for lack of space is 53100
// disk_full naming the file, whether the error says so itself or the
// embedded broker reports it (Engine.DiskFullSince: the broker answers
// UNKNOWN_SERVER_ERROR); anything else is 58030 naming the topic.
func (e *Engine) produceError(topic string, started time.Time, err error) error {
	if pe, ok := pgerr.FromDiskFull(err, "topic "+topic); ok {
		return pe
	}
	if e.DiskFullSince != nil {
		if derr := e.DiskFullSince(started); derr != nil {
			if pe, ok := pgerr.FromDiskFull(derr, "topic "+topic); ok {
				pe.Detail = fmt.Sprintf("The embedded broker could not write the records to topic %s; it answered %v.", topic, err)
				return pe
			}
		}
	}
	return pgerr.New(pgerr.IOError, "writing to topic %s: %v", topic, err)
}
