package web_test

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/secrets"
)

func TestRunPageShowsWebhookDeliveries(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t)
	tn := f.runTenant(t, "hooks")
	c, _ := f.login(t, f.member(t, tn, "viewer", policy.RoleViewer))
	ctx := t.Context()

	var hits atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	t.Cleanup(hook.Close)
	th, err := f.agents.CreateThread(ctx, systemAccess(tn), "hooks")
	require.NoError(t, err)
	f.model.Enqueue(llmtest.Reply{Content: "done"})
	run, _, err := f.agents.CreateRun(ctx, systemAccess(tn), th.ID, agent.CreateRunInput{Input: "go", WebhookURL: hook.URL + "/in"})
	require.NoError(t, err)
	runPage := "/console/t/" + tn.Slug + "/runs/" + run.ID.String()
	_, doc := c.get(runPage)
	require.Zero(t, doc.Find(testID("webhook-deliveries")).Length(), "no section before the run ends")

	f.execute(t, tn, run.ID.String())
	_, doc = c.get(runPage)
	d := doc.Find(testID("webhook-delivery"))
	require.Equal(t, 1, d.Length())
	require.Equal(t, "pending", d.AttrOr("data-status", ""))
	require.Equal(t, hook.URL+"/in", d.Find(testID("webhook-delivery-url")).Text())
	require.Zero(t, d.Find(testID("webhook-attempt")).Length())

	// Deliver it: a 502, then a 200.
	pool := pgtest.Pool(t)
	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	vault, err := secrets.NewVault(pool, key, nil)
	require.NoError(t, err)
	deliverer, err := agent.NewService(pool, agent.Config{}, vault, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, deliverer.UseDelivery(agent.DeliveryConfig{BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond, AllowPrivate: true}))
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, river.Worker[agent.DeliverArgs](&agent.DeliverWorker{Service: deliverer}))
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	args := agent.DeliverArgs{TenantID: tn.ID, DeliveryID: uuid.MustParse(d.AttrOr("data-id", ""))}
	res, _ := w.Work(ctx, t, tx, args, nil)
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	res, err = w.WorkJob(ctx, t, tx, res.Job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)

	_, doc = c.get(runPage)
	d = doc.Find(testID("webhook-delivery"))
	require.Equal(t, "delivered", d.AttrOr("data-status", ""))
	require.Equal(t, "delivered", d.Find(testID("webhook-delivery-status")).Text())
	codes := d.Find(testID("webhook-attempt")).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-status-code", "") })
	require.Equal(t, []string{"502", "200"}, codes)
	require.Contains(t, d.Find(testID("webhook-attempt")).First().Text(), "502 Bad Gateway")
}
