package jobs

import (
	"context"
	"fmt"
	"log/slog"

	"riverqueue.com/riverui"
)

// UIPrefix is where the River UI is mounted.
const UIPrefix = "/admin/river"

// NewUI builds the River UI handler; the caller guards it (platform admins
// only) and must Start it.
func NewUI(ctx context.Context, r *Runtime, logger *slog.Logger) (*riverui.Handler, error) {
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(r.Client, nil),
		Logger:    logger,
		Prefix:    UIPrefix,
	})
	if err != nil {
		return nil, fmt.Errorf("river ui: %w", err)
	}
	if err := h.Start(ctx); err != nil {
		return nil, fmt.Errorf("start river ui: %w", err)
	}
	return h, nil
}
