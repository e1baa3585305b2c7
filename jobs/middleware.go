package jobs

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// logMiddleware logs every job's outcome with its id, kind, attempt and,
// when its args carry one, tenant id, and puts those attributes on the
// logger in ctx for the worker to use.
type logMiddleware struct {
	river.MiddlewareDefaults
	logger *slog.Logger
}

type loggerKey struct{}

// Logger returns the job-scoped logger inside a worker, or fallback.
func Logger(ctx context.Context, fallback *slog.Logger) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return fallback
}

func (m *logMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	attrs := []any{
		slog.Int64("job_id", job.ID),
		slog.String("job_kind", job.Kind),
		slog.Int("attempt", job.Attempt),
	}
	if t := tenantOf(job.EncodedArgs); t != "" {
		attrs = append(attrs, slog.String("tenant_id", t))
	}
	l := m.logger.With(attrs...)
	start := time.Now()
	err := doInner(context.WithValue(ctx, loggerKey{}, l))
	if err != nil {
		l.WarnContext(ctx, "job failed", slog.Duration("took", time.Since(start)), slog.String("error", err.Error()))
		return err
	}
	l.InfoContext(ctx, "job done", slog.Duration("took", time.Since(start)))
	return nil
}

// tenantOf reads args.tenant_id; tenant-scoped job args all carry one.
func tenantOf(args []byte) string {
	var v struct {
		TenantID string `json:"tenant_id"`
	}
	_ = json.Unmarshal(args, &v)
	return v.TenantID
}
