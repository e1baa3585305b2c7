package web_test

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

// chromiumPath is the Debian package's binary.
const chromiumPath = "/usr/bin/chromium"

// css selects the first element with a data-testid, optionally narrowed.
func css(id string, more ...string) chromedp.CSS {
	return chromedp.CSS(testID(id) + strings.Join(more, ""))
}

// TestBrowserAPIKeyLifecycle signs in through a real headless Chromium,
// creates a key with htmx, reads the one-time display, and revokes the key
// through the confirm dialog.
func TestBrowserAPIKeyLifecycle(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required in CI: %v", err)
		}
		t.Skipf("chromium not installed at %s", chromiumPath)
	}
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "browser")
	email := f.member(t, tn, "dev", policy.RoleDeveloper)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
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
		chromedp.WindowSize(1280, 900),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	// hx-confirm opens window.confirm, which blocks the page until answered.
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

	keyRow := `[data-name="browser-key"]`
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(f.srv.URL+"/console/login"),
		chromedp.WaitVisible(css("login-email")),
		chromedp.SendKeys(css("login-email"), email),
		chromedp.SendKeys(css("login-password"), testPassword),
		chromedp.Click(css("login-submit")),
		chromedp.WaitVisible(css("members-table")),
		chromedp.Click(css("nav-api-keys")),
		chromedp.WaitVisible(css("create-key-form")),
	))
	// The create form must go through htmx, not the no-script fallback.
	_, err := chromedp.Run(bctx, chromedp.Poll[bool](`typeof window.htmx === "object"`))
	require.NoError(t, err)

	require.NoError(t, chromedp.Do(bctx,
		chromedp.SendKeys(css("key-name"), "browser-key"),
		chromedp.Click(css("key-create")),
		chromedp.WaitVisible(css("new-api-key")),
	))
	key, err := chromedp.Run(bctx, chromedp.Text(css("new-api-key")))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(key, "ap_"), "one-time key %q", key)
	_, err = f.svc.AuthenticateKey(t.Context(), key)
	require.NoError(t, err, "the displayed key works")

	status, err := chromedp.Run(bctx, chromedp.Text(css("api-key-row", keyRow, " ", testID("api-key-status"))))
	require.NoError(t, err)
	require.Equal(t, "active", status)

	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(css("api-key-row", keyRow, " ", testID("api-key-revoke"))),
		chromedp.WaitVisible(css("api-key-row", keyRow, `[data-status="revoked"]`)),
	))
	status, err = chromedp.Run(bctx, chromedp.Text(css("api-key-row", keyRow, " ", testID("api-key-status"))))
	require.NoError(t, err)
	require.Equal(t, "revoked", status)
	require.Equal(t, int32(1), confirmed.Load(), "revoking asks for confirmation")
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitNotPresent(css("new-api-key"))), "the key is shown only once")
	_, err = f.svc.AuthenticateKey(t.Context(), key)
	require.Error(t, err, "the revoked key no longer works")

	// A screenshot for humans checking the look of the page.
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile("/tmp/console-apikeys.png", png, 0o644))
}
