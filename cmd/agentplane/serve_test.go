package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
)

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// testMasterKey is shared by every serve in this package: they share one
// database, whose data keys must unwrap under the same master key.
const testMasterKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// startServe runs `agentplane serve` in a goroutine, waits for /readyz, and
// returns the base URL and stop, which cancels serve's ctx and returns run's
// result (or fails after 30s). The test's cleanup stops it too.
func startServe(t *testing.T, extra ...string) (base string, stop func() error) {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"serve", "--database-url", pgtest.URL(t), "--http-addr", addr,
		"--redis-url", "", "--log-level", "error", "--stop-timeout", "5s", "--master-key", testMasterKey}, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, io.Discard) }()
	stop = sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("serve did not shut down within 30s of cancellation")
		}
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})

	base = "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("serve returned before it was ready: %v", err)
		default:
		}
		if resp, err := http.Get(base + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, stop
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("serve never became ready")
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func request(t *testing.T, method, url, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	token := strings.Repeat("t0k3n", 8) // 40 characters
	base, stop := startServe(t, "--admin-token", token)

	slug := "e2e-" + pgtest.Suffix()
	resp := request(t, http.MethodPost, base+"/v1/tenants", token, `{"slug":"`+slug+`","name":"End to End"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var created struct{ Slug, Status string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	require.Equal(t, slug, created.Slug)
	require.Equal(t, "active", created.Status)

	require.Equal(t, http.StatusOK, request(t, http.MethodGet, base+"/v1/tenants/"+slug, token, "").StatusCode)
	require.Equal(t, http.StatusUnauthorized, request(t, http.MethodGet, base+"/v1/tenants/"+slug, "", "").StatusCode)
	require.Equal(t, http.StatusUnauthorized, request(t, http.MethodGet, base+"/v1/tenants/"+slug, token+"x", "").StatusCode)

	ui := request(t, http.MethodGet, base+"/admin/river/", token, "")
	require.Equal(t, http.StatusOK, ui.StatusCode, "the River UI for the platform admin")
	require.Contains(t, ui.Header.Get("Content-Type"), "text/html")
	require.Equal(t, http.StatusNotFound, request(t, http.MethodGet, base+"/admin/river/", "", "").StatusCode)
	require.Equal(t, http.StatusNotFound, request(t, http.MethodGet, base+"/admin/river/", "wrong-token", "").StatusCode)

	root := request(t, http.MethodGet, base+"/", "", "")
	require.Equal(t, http.StatusFound, root.StatusCode)
	require.Equal(t, "/console/", root.Header.Get("Location"))

	require.Equal(t, http.StatusOK, request(t, http.MethodGet, base+"/healthz", "", "").StatusCode)

	require.NoError(t, stop(), "a cancelled serve shuts down cleanly")
	_, err := http.Get(base + "/healthz")
	require.Error(t, err, "the listener is closed after shutdown")
}

// TestServeWorkerRoleServesOnlyOps: a worker process exposes probes and
// metrics, not the API or the console.
func TestServeWorkerRoleServesOnlyOps(t *testing.T) {
	t.Parallel()
	token := strings.Repeat("w0rk3r", 7)
	base, _ := startServe(t, "--role", "worker", "--admin-token", token)
	require.Equal(t, http.StatusOK, request(t, http.MethodGet, base+"/metrics", "", "").StatusCode)
	require.Equal(t, http.StatusNotFound, request(t, http.MethodGet, base+"/v1/tenants", token, "").StatusCode)
	require.Equal(t, http.StatusNotFound, request(t, http.MethodGet, base+"/admin/river/", token, "").StatusCode)
}

func TestServeFailsFastOnBadAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	err = run(t.Context(), []string{"serve", "--database-url", pgtest.URL(t), "--http-addr", ln.Addr().String(),
		"--redis-url", "", "--log-level", "error", "--master-key", testMasterKey}, io.Discard)
	require.ErrorContains(t, err, "AGENTPLANE_HTTP_ADDR", "a taken port is reported, not retried")
}
