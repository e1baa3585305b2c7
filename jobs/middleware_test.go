package jobs

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

// TestLogMiddleware drives (*logMiddleware).Work with fake job rows: the
// product's worker list is fixed, so a tenant-scoped job is simulated here.
func TestLogMiddleware(t *testing.T) {
	t.Parallel()
	const tenantID = "01900000-0000-7000-8000-000000000001"
	boom := errors.New("boom")
	tests := []struct {
		name       string
		args       string
		innerErr   error
		wantMsg    string
		wantLevel  string
		wantTenant string
	}{
		{name: "done with tenant", args: `{"tenant_id":"` + tenantID + `","x":1}`, wantMsg: "job done", wantLevel: "INFO", wantTenant: tenantID},
		{name: "done without tenant", args: `{}`, wantMsg: "job done", wantLevel: "INFO"},
		{name: "args not an object", args: `[1,2]`, wantMsg: "job done", wantLevel: "INFO"},
		{name: "tenant_id not a string", args: `{"tenant_id":7}`, wantMsg: "job done", wantLevel: "INFO"},
		{name: "failed", args: `{"tenant_id":"` + tenantID + `"}`, innerErr: boom, wantMsg: "job failed", wantLevel: "WARN", wantTenant: tenantID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &logBuffer{}
			m := &logMiddleware{logger: slog.New(slog.NewJSONHandler(logs, nil))}
			job := &rivertype.JobRow{ID: 4242, Kind: "test.kind", Attempt: 3, EncodedArgs: []byte(tt.args)}

			var inside *slog.Logger
			err := m.Work(t.Context(), job, func(ctx context.Context) error {
				inside = Logger(ctx, nil)
				inside.InfoContext(ctx, "inside the worker")
				return tt.innerErr
			})
			if tt.innerErr != nil {
				require.ErrorIs(t, err, tt.innerErr, "the middleware must return the worker's error unchanged")
			} else {
				require.NoError(t, err)
			}
			require.NotNil(t, inside, "Logger(ctx) inside the worker must be the job-scoped logger")

			lines := logs.lines(t)
			require.Len(t, lines, 2)
			for _, l := range lines {
				require.Equal(t, float64(4242), l["job_id"], "%v", l)
				require.Equal(t, "test.kind", l["job_kind"], "%v", l)
				require.Equal(t, float64(3), l["attempt"], "%v", l)
				if tt.wantTenant != "" {
					require.Equal(t, tt.wantTenant, l["tenant_id"], "%v", l)
				} else {
					require.NotContains(t, l, "tenant_id")
				}
			}
			out := lines[1]
			require.Equal(t, tt.wantMsg, out["msg"])
			require.Equal(t, tt.wantLevel, out["level"])
			require.Contains(t, out, "took")
			if tt.innerErr != nil {
				require.Equal(t, "boom", out["error"])
			} else {
				require.NotContains(t, out, "error")
			}
		})
	}
}

func TestLoggerFallsBackOutsideJobs(t *testing.T) {
	t.Parallel()
	fallback := slog.New(slog.DiscardHandler)
	require.Same(t, fallback, Logger(t.Context(), fallback))
}
