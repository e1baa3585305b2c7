package sandbox

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/google/uuid"
)

// Virtual paths every sandbox presents.
const (
	UserData  = "/mnt/user-data"
	Uploads   = "/mnt/user-data/uploads"
	Workspace = "/mnt/user-data/workspace"
	Outputs   = "/mnt/user-data/outputs"
	Skills    = "/mnt/skills"
)

// Limits bound one command.
type Limits struct {
	WallTime    time.Duration // whole command, killed after
	CPUTime     time.Duration // RLIMIT_CPU or cgroup
	MemoryBytes int64         // address space or cgroup memory
	MaxProcs    int           // processes/threads
	OutputBytes int64         // stdout+stderr kept; more is discarded and the command killed
}

// AcquireOptions shape a sandbox for its thread.
type AcquireOptions struct {
	// Network lets commands reach the network; off by default.
	Network bool
}

// ExecRequest is one command.
type ExecRequest struct {
	Command string
	// Env is added to the scrubbed base environment for this call only
	// (secrets bound by policy); it never appears in the command string.
	Env map[string]string
	// Timeout overrides Limits.WallTime when shorter; 0 = the limit.
	Timeout time.Duration
}

// ExecResult is what a command did.
type ExecResult struct {
	Output    string // stdout and stderr, interleaved, truncated to OutputBytes
	ExitCode  int
	Duration  time.Duration
	Truncated bool
	// Killed names the limit that stopped the command ("timeout", "output",
	// "memory", "cpu", "procs"), empty when it exited by itself.
	Killed string
}

// FileInfo describes an entry for ls/glob.
type FileInfo struct {
	Path    string // virtual path
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time
	IsDir   bool
}

// Provider is the seam every sandbox implementation fills. Ids are opaque
// and stable: Acquire for a thread that already has a live sandbox returns
// the same id.
type Provider interface {
	Name() string
	Acquire(ctx context.Context, tenantID, threadID uuid.UUID, opts AcquireOptions) (string, error)
	Exec(ctx context.Context, id string, req ExecRequest) (ExecResult, error)
	ReadFile(ctx context.Context, id, path string) ([]byte, error)
	WriteFile(ctx context.Context, id, path string, data []byte, appendTo bool) error
	Stat(ctx context.Context, id, path string) (FileInfo, error)
	List(ctx context.Context, id, dir string) ([]FileInfo, error)
	// Walk visits every regular file under dir (virtual paths), for glob,
	// grep and the settlement snapshot.
	Walk(ctx context.Context, id, dir string, fn func(FileInfo) error) error
	// Release returns the sandbox to the warm pool (files kept).
	Release(ctx context.Context, id string) error
	// Destroy removes the sandbox and its processes; files stay with the thread.
	Destroy(ctx context.Context, id string) error
}

// Errors every provider reports the same way.
var (
	ErrNotFound      = errors.New("sandbox not found")
	ErrPathRefused   = errors.New("path refused")
	ErrReadOnly      = errors.New("path is read-only")
	ErrNoSuchFile    = errors.New("no such file")
	ErrProviderOff   = errors.New("sandbox provider not enabled")
	ErrLeaseConflict = errors.New("sandbox is driven by another worker")
)
