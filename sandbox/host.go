package sandbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// Host runs commands directly on the server, as the server's user, with
// only the wall-time and output limits and the scrubbed environment. It
// isolates nothing (no namespaces, no resource limits, the network and the
// whole file system are reachable) and exists for development on machines
// without bubblewrap; NewHost refuses unless it is explicitly enabled.
//
// Commands see host paths: /mnt/user-data and /mnt/skills in a command are
// rewritten to the thread's host directories and back in its output, so
// the same tool calls work on both providers. File operations are the
// same as bubblewrap's (os.Root confined).
type Host struct {
	tree   Tree
	limits Limits
	env    EnvPolicy
	files  fileOps
	boxes  registry
}

// NewHost returns the development provider, or ErrProviderOff unless
// enabled is true.
func NewHost(tree Tree, limits Limits, enabled bool) (*Host, error) {
	if !enabled {
		return nil, fmt.Errorf("host sandbox provider: %w", ErrProviderOff)
	}
	if tree.Root == "" {
		return nil, fmt.Errorf("host sandbox provider: tree root is required")
	}
	return &Host{tree: tree, limits: limits.WithDefaults(), files: fileOps{uid: -1, gid: -1}}, nil
}

// WithEnv sets the environment policy (passthrough names); it returns h.
func (h *Host) WithEnv(p EnvPolicy) *Host { h.env = p; return h }

// Name implements Provider.
func (h *Host) Name() string { return "host" }

// Acquire implements Provider; the id is "host-" + thread id.
func (h *Host) Acquire(ctx context.Context, tenantID, threadID uuid.UUID, _ AcquireOptions) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	tt := h.tree.Thread(tenantID, threadID)
	id := "host-" + threadID.String()
	_, _, err := h.boxes.acquire(id, tenantID, threadID, func() (*box, error) {
		if err := tt.Ensure(-1, -1); err != nil {
			return nil, fmt.Errorf("acquire sandbox for thread %s: %w", threadID, err)
		}
		return &box{tree: tt}, nil
	})
	return id, err
}

// Exec implements Provider: sh -c in the thread's workspace.
func (h *Host) Exec(ctx context.Context, id string, req ExecRequest) (ExecResult, error) {
	b, ctx, done, err := h.boxes.begin(ctx, id)
	if err != nil {
		return ExecResult{}, err
	}
	defer done()
	userData, skills := b.tree.UserDataDir(), b.tree.SkillsDir()
	home := userData + "/workspace"
	env, err := h.env.Build(req.Env, home)
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec in %s: %w", id, err)
	}
	toHost := strings.NewReplacer(UserData, userData, Skills, skills)
	res, err := run(ctx, process{
		path:      shell(),
		args:      []string{"-c", toHost.Replace(req.Command)},
		env:       env,
		dir:       home,
		wall:      h.limits.wall(req.Timeout),
		maxOutput: h.limits.OutputBytes,
	})
	res.Output = strings.NewReplacer(userData, UserData, skills, Skills).Replace(res.Output)
	if err != nil {
		return res, fmt.Errorf("exec in %s: %w", id, err)
	}
	return res, nil
}

// ReadFile implements Provider.
func (h *Host) ReadFile(_ context.Context, id, path string) ([]byte, error) {
	b, err := h.boxes.get(id)
	if err != nil {
		return nil, err
	}
	return h.files.readFile(b.tree, path)
}

// WriteFile implements Provider.
func (h *Host) WriteFile(_ context.Context, id, path string, data []byte, appendTo bool) error {
	b, err := h.boxes.get(id)
	if err != nil {
		return err
	}
	return h.files.writeFile(id, b.tree, path, data, appendTo)
}

// Stat implements Provider.
func (h *Host) Stat(_ context.Context, id, path string) (FileInfo, error) {
	b, err := h.boxes.get(id)
	if err != nil {
		return FileInfo{}, err
	}
	return h.files.stat(b.tree, path)
}

// List implements Provider.
func (h *Host) List(_ context.Context, id, dir string) ([]FileInfo, error) {
	b, err := h.boxes.get(id)
	if err != nil {
		return nil, err
	}
	return h.files.list(b.tree, dir)
}

// Walk implements Provider.
func (h *Host) Walk(ctx context.Context, id, dir string, fn func(FileInfo) error) error {
	b, err := h.boxes.get(id)
	if err != nil {
		return err
	}
	return h.files.walk(ctx, b.tree, dir, fn)
}

// Release implements Provider: the sandbox stays, idle.
func (h *Host) Release(_ context.Context, id string) error {
	_, err := h.boxes.release(id, -1)
	return err
}

// Stop destroys every sandbox (server shutdown).
func (h *Host) Stop(context.Context) error {
	for _, b := range h.boxes.all() {
		b.stop()
	}
	return nil
}

// Destroy implements Provider: running commands are killed; files stay.
func (h *Host) Destroy(_ context.Context, id string) error {
	b, err := h.boxes.remove(id)
	if err != nil {
		return err
	}
	b.stop()
	return nil
}
