package web

import (
	"net/url"
	"time"

	"github.com/agentplane/agentplane/web/ui"
)

// listLimit is the page size of the console's lists.
const listLimit = 50

// Times are shown in UTC to the minute: the console serves tenants in every
// zone, and the audit log's order must read the same for all of them.
func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

func fmtDate(t time.Time) string { return t.UTC().Format("2006-01-02") }

// fmtOptTime renders an optional time, or none when it is unset.
func fmtOptTime(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return fmtTime(*t)
}

// nextPage links to the page after cursor, keeping the other query values.
func nextPage(path string, q url.Values, cursor string) string {
	if cursor == "" {
		return ""
	}
	q2 := url.Values{}
	for k, vs := range q {
		if k != "cursor" && len(vs) > 0 && vs[0] != "" {
			q2.Set(k, vs[0])
		}
	}
	q2.Set("cursor", cursor)
	return ui.WithQuery(path, q2)
}
