package web_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/policy"
)

// TestBrowserLiveRun signs in through a real headless Chromium, creates a
// thread, sends a message, and watches the run page follow the run live:
// the run executes only after the page has loaded, and its events, output,
// status and messages arrive over the console's SSE stream without a
// reload.
func TestBrowserLiveRun(t *testing.T) {
	needChromium(t)
	t.Parallel()
	f := newRunsFixture(t)
	tn := f.runTenant(t, "browser-runs")
	email := f.member(t, tn, "dev", policy.RoleDeveloper)

	bctx := startBrowser(t)

	browserLogin(t, bctx, f.srv.URL, email)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(css("nav-threads")),
		chromedp.WaitVisible(css("create-thread-form")),
	))

	require.NoError(t, chromedp.Do(bctx,
		chromedp.SendKeys(css("thread-title"), "Browser thread"),
		chromedp.Click(css("thread-create")),
		chromedp.WaitVisible(css("send-message-form")),
		chromedp.SendKeys(css("run-input"), "please echo ping"),
		chromedp.Click(css("run-create")),
		chromedp.WaitVisible(css("run-status", `[data-status="queued"]`)),
		chromedp.WaitVisible(css("event", `[data-type="run.queued"]`)),
	))
	// Wait for the SSE extension (the stream resumes after the page's last
	// event, so it misses nothing whenever it connects), then mark the
	// page: a reload would lose the mark.
	_, err := chromedp.Run(bctx, chromedp.Poll[bool](`typeof htmx.createEventSource === "function"`))
	require.NoError(t, err)
	_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`window.livePageMark = true`))
	require.NoError(t, err)

	// The run executes after the page loaded, slowly enough to stream.
	f.model.Enqueue(
		llmtest.Reply{Content: "Let me echo that.", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"ping"}`}},
			ChunkDelay: 40 * time.Millisecond, Usage: &llm.Usage{InputTokens: 20, OutputTokens: 7, TotalTokens: 27}},
		llmtest.Reply{Content: "The tool said: echo: ping. All done.", ChunkDelay: 40 * time.Millisecond,
			Usage: &llm.Usage{InputTokens: 40, OutputTokens: 12, TotalTokens: 52}},
	)
	runs, err := f.agents.ListRuns(t.Context(), systemAccess(tn), agent.RunFilter{}, pageAll)
	require.NoError(t, err)
	require.Len(t, runs.Runs, 1)
	executed := make(chan error, 1)
	go func() {
		executed <- f.agents.Execute(context.WithoutCancel(t.Context()), agent.RunArgs{TenantID: tn.ID, RunID: runs.Runs[0].ID})
	}()

	require.NoError(t, chromedp.Do(bctx,
		chromedp.WaitVisible(css("event", `[data-type="message.delta"]`)),
		chromedp.WaitVisible(css("event", `[data-type="run.completed"]`)),
		chromedp.WaitVisible(css("run-status", `[data-status="succeeded"]`)),
		chromedp.WaitVisible(css("run-messages", " ", testID("tool-call"), `[data-name="echo"]`)),
	))
	require.NoError(t, <-executed)

	mark, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.livePageMark === true`))
	require.NoError(t, err)
	require.True(t, mark, "the page updated without a reload")
	output, err := chromedp.Run(bctx, chromedp.Text(css("live-output")))
	require.NoError(t, err)
	before, after, ok := strings.Cut(output, "Let me echo that.")
	require.True(t, ok, output)
	require.Empty(t, strings.TrimSpace(before))
	require.Equal(t, "The tool said: echo: ping. All done.", strings.TrimSpace(after), "a break between the model calls")
	stop, err := chromedp.Run(bctx, chromedp.Text(css("run-stop-reason")))
	require.NoError(t, err)
	require.Equal(t, "end_turn", stop)
	total, err := chromedp.Run(bctx, chromedp.Text(css("run-total-tokens")))
	require.NoError(t, err)
	require.Equal(t, "79", total)
	// Each event arrives once: the stream resumed after what the page showed.
	seqs, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('[data-testid="event"]')].map(e => e.dataset.seq)`))
	require.NoError(t, err)
	for i, s := range seqs {
		require.Equal(t, strconv.Itoa(i+1), s)
	}
	_, err = chromedp.Run(bctx, chromedp.WaitNotPresent(css("run-cancel")))
	require.NoError(t, err)

	// A screenshot for humans checking the look of the page.
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile("/tmp/console-run.png", png, 0o644))
}

// TestBrowserCancelRun cancels a queued run from its live page through the
// confirm dialog: the page shows the cancelled run in place.
func TestBrowserCancelRun(t *testing.T) {
	needChromium(t)
	t.Parallel()
	f := newRunsFixture(t)
	tn := f.runTenant(t, "browser-cancel")
	th, err := f.agents.CreateThread(t.Context(), systemAccess(tn), "to cancel")
	require.NoError(t, err)
	run := f.startRun(t, tn, th.ID, "never mind")
	email := f.member(t, tn, "dev", policy.RoleDeveloper)
	bctx := startBrowser(t)

	var confirmed atomic.Int32
	dialogs := chromedp.Events(bctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			confirmed.Add(1)
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()

	browserLogin(t, bctx, f.srv.URL, email)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(f.srv.URL+"/console/t/"+tn.Slug+"/runs/"+run.ID.String()),
		chromedp.WaitVisible(css("run-status", `[data-status="queued"]`)),
	))
	_, err = chromedp.Run(bctx, chromedp.Poll[bool](`typeof htmx.createEventSource === "function"`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(css("run-cancel")),
		chromedp.WaitVisible(css("flash")),
		chromedp.WaitVisible(css("run-status", `[data-status="cancelled"]`)),
		chromedp.WaitVisible(css("event", `[data-type="run.completed"]`)),
		chromedp.WaitNotPresent(css("run-cancel")),
	))
	require.Equal(t, int32(1), confirmed.Load(), "cancelling asks for confirmation")
	pages, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="run-live"]').length`))
	require.NoError(t, err)
	require.Equal(t, 1, pages, "the response replaced the page, not a part of it")
	got, err := f.agents.GetRun(t.Context(), systemAccess(tn), run.ID)
	require.NoError(t, err)
	require.Equal(t, agent.StatusCancelled, got.Status)
}

func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required in CI: %v", err)
		}
		t.Skipf("chromium not installed at %s", chromiumPath)
	}
}

// startBrowser starts a headless Chromium for one test, stopped when the
// test ends or after a minute.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	return bctx
}

// browserLogin signs in through the form and waits for htmx.
func browserLogin(t *testing.T, bctx context.Context, base, email string) {
	t.Helper()
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(base+"/console/login"),
		chromedp.WaitVisible(css("login-email")),
		chromedp.SendKeys(css("login-email"), email),
		chromedp.SendKeys(css("login-password"), testPassword),
		chromedp.Click(css("login-submit")),
		chromedp.WaitVisible(css("members-table")),
	))
	_, err := chromedp.Run(bctx, chromedp.Poll[bool](`typeof window.htmx === "object"`))
	require.NoError(t, err)
}
