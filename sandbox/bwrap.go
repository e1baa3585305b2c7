package sandbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/google/uuid"
)

// Bwrap is the default provider: every command runs in fresh Linux
// namespaces built by bubblewrap (no network unless the sandbox was
// acquired with it, private /proc, /dev, /tmp and PID space, a read-only
// system, read-only skills and the thread's own three writable folders),
// as an unprivileged uid, under wall-time, output, memory, process,
// CPU-time and file-size limits.
//
// A sandbox is the thread's tree plus its resource groups; each Exec is
// one bubblewrap run, so nothing a command starts outlives it and a
// command cannot leave anything behind for the next one but files.
type Bwrap struct {
	cfg    BwrapConfig
	cred   *syscall.Credential
	cg     *cgroups // nil: rlimits only
	etcDir string   // the /etc snapshot (buildEtc)
	files  fileOps
	boxes  registry
}

// bwrapBox is the provider state of one sandbox.
type bwrapBox struct {
	network atomic.Bool
	cg      *cgroupSet // nil without cgroups
}

// NewBwrap checks the configuration, detects the resource-control
// mechanism and snapshots the sandbox's /etc.
func NewBwrap(cfg BwrapConfig) (*Bwrap, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Bwrap{cfg: cfg, cred: cfg.runAs(), files: fileOps{uid: -1, gid: -1}}
	if p.cred != nil {
		p.files.uid, p.files.gid = cfg.RunAsUID, cfg.RunAsGID
	}
	if !cfg.DisableCgroups {
		p.cg = detectCgroups()
	}
	if err := ensureDir(cfg.Tree.Root, 0o711, p.cred != nil); err != nil {
		return nil, fmt.Errorf("bwrap: tree root: %w", err)
	}
	if err := checkReachable(cfg.Tree.Root, p.cred); err != nil {
		return nil, err
	}
	etc, err := buildEtc(filepath.Join(cfg.Tree.Root, "system"), p.files.uid, p.files.gid)
	if err != nil {
		return nil, fmt.Errorf("bwrap: %w", err)
	}
	p.etcDir = etc
	return p, nil
}

// Name implements Provider.
func (p *Bwrap) Name() string { return "bwrap" }

// Mechanism describes the resource controls in use, for start-up logs.
func (p *Bwrap) Mechanism() string {
	mem, procs := "rlimit-as", "rlimit-nproc"
	if p.cg != nil && p.cg.memParent != "" {
		mem = "cgroup"
	}
	if p.cg != nil && p.cg.pidsParent != "" {
		procs = "cgroup"
	}
	v := "none"
	if p.cg != nil {
		v = map[bool]string{true: "v2", false: "v1"}[p.cg.v2]
	}
	return fmt.Sprintf("cgroups=%s memory=%s procs=%s cpu=rlimit-cpu fsize=rlimit-fsize", v, mem, procs)
}

// Acquire implements Provider; the id is "bwrap-" + thread id, so it is
// the same for the thread's whole life, across releases and destroys.
func (p *Bwrap) Acquire(ctx context.Context, tenantID, threadID uuid.UUID, opts AcquireOptions) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	id := "bwrap-" + threadID.String()
	b, _, err := p.boxes.acquire(id, tenantID, threadID, func() (*box, error) {
		tt := p.cfg.Tree.Thread(tenantID, threadID)
		if err := tt.Ensure(p.files.uid, p.files.gid); err != nil {
			return nil, fmt.Errorf("acquire sandbox for thread %s: %w", threadID, err)
		}
		// No command of this sandbox is running yet, so nothing can race
		// the walk; files uploaded or left by the server become writable.
		if p.files.uid >= 0 {
			if err := tt.chownTree(p.files.uid, p.files.gid); err != nil {
				return nil, fmt.Errorf("acquire sandbox for thread %s: %w", threadID, err)
			}
		}
		st := &bwrapBox{}
		if p.cg != nil {
			set, err := p.cg.create(id, p.cfg.Limits)
			if err != nil {
				return nil, fmt.Errorf("acquire sandbox for thread %s: %w", threadID, err)
			}
			st.cg = set
		}
		return &box{tree: tt, extra: st}, nil
	})
	if err != nil {
		return "", err
	}
	b.extra.(*bwrapBox).network.Store(opts.Network)
	return id, nil
}

// Release implements Provider: the sandbox goes to the warm pool; the
// least recently used idle sandboxes beyond WarmPoolSize are torn down.
func (p *Bwrap) Release(_ context.Context, id string) error {
	evicted, err := p.boxes.release(id, p.cfg.WarmPoolSize)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range evicted {
		errs = append(errs, p.teardown(b))
	}
	return errors.Join(errs...)
}

// Destroy implements Provider: running commands are killed and waited
// for, the resource groups removed; the thread's files stay.
func (p *Bwrap) Destroy(_ context.Context, id string) error {
	b, err := p.boxes.remove(id)
	if err != nil {
		return err
	}
	return p.teardown(b)
}

// Stop destroys every sandbox (server shutdown).
func (p *Bwrap) Stop(context.Context) error {
	var errs []error
	for _, b := range p.boxes.all() {
		errs = append(errs, p.teardown(b))
	}
	return errors.Join(errs...)
}

func (p *Bwrap) teardown(b *box) error {
	b.stop()
	if st := b.extra.(*bwrapBox); st.cg != nil {
		if err := st.cg.remove(); err != nil {
			return fmt.Errorf("destroy sandbox %s: %w", b.id, err)
		}
	}
	return nil
}

// ReadFile implements Provider.
func (p *Bwrap) ReadFile(_ context.Context, id, path string) ([]byte, error) {
	b, err := p.boxes.get(id)
	if err != nil {
		return nil, err
	}
	return p.files.readFile(b.tree, path)
}

// WriteFile implements Provider.
func (p *Bwrap) WriteFile(_ context.Context, id, path string, data []byte, appendTo bool) error {
	b, err := p.boxes.get(id)
	if err != nil {
		return err
	}
	return p.files.writeFile(id, b.tree, path, data, appendTo)
}

// Stat implements Provider.
func (p *Bwrap) Stat(_ context.Context, id, path string) (FileInfo, error) {
	b, err := p.boxes.get(id)
	if err != nil {
		return FileInfo{}, err
	}
	return p.files.stat(b.tree, path)
}

// List implements Provider.
func (p *Bwrap) List(_ context.Context, id, dir string) ([]FileInfo, error) {
	b, err := p.boxes.get(id)
	if err != nil {
		return nil, err
	}
	return p.files.list(b.tree, dir)
}

// Walk implements Provider.
func (p *Bwrap) Walk(ctx context.Context, id, dir string, fn func(FileInfo) error) error {
	b, err := p.boxes.get(id)
	if err != nil {
		return err
	}
	return p.files.walk(ctx, b.tree, dir, fn)
}
