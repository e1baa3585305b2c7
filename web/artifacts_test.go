package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/agenttest"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/sandbox"
)

// newFilesFixture is a runs fixture whose agent service has a thread tree
// and two tools: put writes under the thread's outputs folder on the host
// (as a sandbox would), present declares paths (as present_files does).
func newFilesFixture(t *testing.T) (*runsFixture, sandbox.Tree) {
	t.Helper()
	tree := sandbox.Tree{Root: t.TempDir()}
	put := tools.Tool{
		Name: "put", Description: "Write a file under outputs.", Group: "test",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`),
		Run: func(_ context.Context, c tools.Call) (string, error) {
			var a struct{ Path, Content string }
			if err := json.Unmarshal(c.Arguments, &a); err != nil {
				return "", err
			}
			p := filepath.Join(tree.Thread(c.TenantID, c.ThreadID).UserDataDir(), "outputs", a.Path)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			return "written", os.WriteFile(p, []byte(a.Content), 0o644)
		},
	}
	present := func(agents *agent.Service) tools.Tool {
		return tools.Tool{
			Name: "present", Description: "Present files.", Group: "test",
			Parameters: json.RawMessage(`{"type":"object","properties":{"paths":{"type":"array"}},"required":["paths"]}`),
			Run: func(ctx context.Context, c tools.Call) (string, error) {
				var a struct{ Paths []string }
				if err := json.Unmarshal(c.Arguments, &a); err != nil {
					return "", err
				}
				_, err := agents.PresentFiles(ctx, c.TenantID, c.ThreadID, c.RunID, a.Paths)
				return "presented", err
			},
		}
	}
	f := newEnvFixture(t, agenttest.Options{Files: &tree, Registry: func(agents *agent.Service) *tools.Registry {
		return tools.NewRegistry(tools.Static{SourceName: "test", List: []tools.Tool{put, present(agents)}})
	}})
	return f, tree
}

// download fetches a console URL raw.
func (c *client) download(path string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), http.MethodGet, c.base+path, nil)
	require.NoError(c.t, err)
	res, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	return res, string(b)
}

func TestRunPageShowsArtifactsAndReceipt(t *testing.T) {
	t.Parallel()
	f, _ := newFilesFixture(t)
	tn := f.runTenant(t, "files")
	dev := f.member(t, tn, "dev", policy.RoleDeveloper)
	c, _ := f.login(t, dev)
	th, err := f.agents.CreateThread(t.Context(), systemAccess(tn), "files")
	require.NoError(t, err)
	run, _, err := f.agents.CreateRun(t.Context(), systemAccess(tn), th.ID, agent.CreateRunInput{Input: "write a report"})
	require.NoError(t, err)
	runPage := "/console/t/" + tn.Slug + "/runs/" + run.ID.String()

	_, doc := c.get(runPage)
	require.Equal(t, 1, doc.Find(testID("delivery-pending")).Length())
	require.Equal(t, 1, doc.Find(testID("artifacts-empty")).Length())

	f.model.Enqueue(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "put", Arguments: `{"path":"report one.md","content":"# Report"}`}, {ID: "c2", Name: "put", Arguments: `{"path":"scratch.txt","content":"x"}`}}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c3", Name: "present", Arguments: `{"paths":["/mnt/user-data/outputs/report one.md"]}`}}},
		llmtest.Reply{Content: "Here is the report."},
	)
	done := f.execute(t, tn, run.ID.String())
	require.Equal(t, agent.StatusSucceeded, done.Status, done.Error)

	res, doc := c.get(runPage)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "delivered", doc.Find(testID("delivery-verdict")).AttrOr("data-verdict", ""))
	paths := func(id string) []string {
		return doc.Find(testID(id) + " [data-path]").Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-path", "") })
	}
	require.Equal(t, []string{"/mnt/user-data/outputs/report one.md", "/mnt/user-data/outputs/scratch.txt"}, paths("delivery-produced"))
	require.Equal(t, []string{"/mnt/user-data/outputs/report one.md"}, paths("delivery-presented"))
	require.Equal(t, []string{"/mnt/user-data/outputs/report one.md"}, paths("delivery-matched"))
	link := doc.Find(testID("artifact")+" a").AttrOr("href", "")
	want := "/console/t/" + tn.Slug + "/threads/" + th.ID.String() + "/files/outputs/report%20one.md"
	require.Equal(t, want, link)

	res, body := c.download(link)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Equal(t, "# Report", body)
	require.Equal(t, `attachment; filename="report one.md"`, res.Header.Get("Content-Disposition"))
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))

	// The completion frame of the live stream carries the receipt too.
	res, body = c.download(runPage + "/events?after=0")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, `data-type="run.settled"`)
	require.Contains(t, body, `id="run-files"`)
	require.Contains(t, body, `data-verdict="delivered"`)
}

func TestThreadPageShowsSandboxAndUploads(t *testing.T) {
	t.Parallel()
	f, tree := newFilesFixture(t)
	tn := f.runTenant(t, "thfiles")
	c, _ := f.login(t, f.member(t, tn, "viewer", policy.RoleViewer))
	a := systemAccess(tn)
	th, err := f.agents.CreateThread(t.Context(), a, "uploads")
	require.NoError(t, err)
	threadPage := "/console/t/" + tn.Slug + "/threads/" + th.ID.String()

	_, doc := c.get(threadPage)
	require.Equal(t, "none yet", strings.TrimSpace(doc.Find(testID("sandbox-id")).Text()))
	require.Equal(t, 1, doc.Find(testID("uploads-empty")).Length())

	ups, err := f.agents.Upload(t.Context(), a, th.ID, func(yield func(agent.UploadPart, error) bool) {
		yield(agent.UploadPart{Name: "data.csv", Body: strings.NewReader("a,b\n1,2\n")}, nil)
	})
	require.NoError(t, err)
	require.Len(t, ups, 1)
	_, err = pgtest.Pool(t).Exec(t.Context(), `INSERT INTO sandboxes (tenant_id, id, thread_id, provider, status) VALUES ($1, $2, $3, 'host', 'idle')`, tn.ID, "sbx-"+th.ID.String()[:8], th.ID)
	require.NoError(t, err)
	_, err = pgtest.Pool(t).Exec(t.Context(), `UPDATE threads SET sandbox_id = $3 WHERE tenant_id = $1 AND id = $2`, tn.ID, th.ID, "sbx-"+th.ID.String()[:8])
	require.NoError(t, err)

	_, doc = c.get(threadPage)
	require.Equal(t, "sbx-"+th.ID.String()[:8], strings.TrimSpace(doc.Find(testID("sandbox-id")).Text()))
	require.Equal(t, "idle", doc.Find(testID("sandbox-status")).AttrOr("data-status", ""))
	row := doc.Find(testID("upload-row"))
	require.Equal(t, 1, row.Length())
	require.Equal(t, "data.csv", row.Find(testID("upload-link")).Text())
	res, body := c.download(row.Find(testID("upload-link")).AttrOr("href", ""))
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "a,b\n1,2\n", body)

	// Refusals: traversal, a symlink out of the tree, another thread, another tenant.
	outside := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(outside, []byte("host secret"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(tree.Thread(tn.ID, th.ID).UserDataDir(), "uploads", "link")))
	other, err := f.agents.CreateThread(t.Context(), a, "other")
	require.NoError(t, err)
	files := threadPage + "/files/"
	for _, p := range []string{
		files + "..%2F..%2F..%2Fetc%2Fpasswd", files + "uploads/..%2F..%2F..%2Fetc%2Fpasswd", files + "uploads/link", files + "uploads",
		"/console/t/" + tn.Slug + "/threads/" + other.ID.String() + "/files/uploads/data.csv",
	} {
		res, body := c.download(p)
		require.Equal(t, http.StatusNotFound, res.StatusCode, p)
		require.NotContains(t, body, "host secret")
		require.NotContains(t, body, tree.Root)
	}
	stranger := f.runTenant(t, "stranger")
	sc, _ := f.login(t, f.member(t, stranger, "dev", policy.RoleDeveloper))
	res, _ = sc.download(files + "uploads/data.csv")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}
