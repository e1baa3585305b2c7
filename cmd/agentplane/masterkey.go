package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentplane/agentplane/tenants/secrets"
)

// masterKeyFile is the dev-mode master key, under DATA_DIR.
const masterKeyFile = "master.key"

// loadMasterKey returns the key that wraps every tenant's secrets data key:
// AGENTPLANE_MASTER_KEY (base64, standard or URL alphabet, 32 bytes), or in
// dev mode only <DATA_DIR>/master.key, generated on first start. Outside dev
// mode a missing key is an error: a generated one would make every secret
// unreadable on the next host. Errors never echo the key.
func loadMasterKey(cfg config, logger *slog.Logger) ([]byte, error) {
	if cfg.MasterKey != "" {
		key, err := decodeMasterKey(cfg.MasterKey)
		if err != nil {
			return nil, fmt.Errorf("AGENTPLANE_MASTER_KEY: %w", err)
		}
		return key, nil
	}
	if !cfg.Dev {
		return nil, errors.New("AGENTPLANE_MASTER_KEY is required: set it to 32 random bytes, base64-encoded (openssl rand -base64 32), and keep it safe; losing it loses every tenant secret")
	}
	path := filepath.Join(cfg.DataDir, masterKeyFile)
	key, created, err := devMasterKey(path)
	if err != nil {
		return nil, fmt.Errorf("AGENTPLANE_MASTER_KEY is unset and the dev master key file failed: %w", err)
	}
	logger.Warn("DEVELOPMENT ONLY: tenant secrets are encrypted with a master key kept in a local file; "+
		"set AGENTPLANE_MASTER_KEY in any real deployment",
		slog.String("path", path), slog.Bool("generated", created))
	return key, nil
}

// decodeMasterKey accepts base64 in the standard or URL alphabet, padded
// or not, around optional whitespace.
func decodeMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	var key []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	if err != nil {
		return nil, errors.New("not valid base64 (standard or URL alphabet)")
	}
	if len(key) != secrets.KeySize {
		return nil, fmt.Errorf("decodes to %d bytes, want exactly %d", len(key), secrets.KeySize)
	}
	return key, nil
}

// devMasterKey reads the key file, or creates it (mode 0600, base64) when
// missing. The file appears complete or not at all (written aside, then
// linked into place), and when two processes start at once the loser of
// the link reads the winner's key.
func devMasterKey(path string) (key []byte, created bool, err error) {
	if key, err := readMasterKeyFile(path); !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("create %s: %w", dir, err)
	}
	key = make([]byte, secrets.KeySize)
	if _, err := randRead(key); err != nil {
		return nil, false, fmt.Errorf("generate master key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, masterKeyFile+".*") // mode 0600
	if err != nil {
		return nil, false, fmt.Errorf("create %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, werr := tmp.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, false, fmt.Errorf("write %s: %w", path, werr)
	}
	err = os.Link(tmp.Name(), path)
	if errors.Is(err, fs.ErrExist) {
		key, err := readMasterKeyFile(path)
		return key, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("create %s: %w", path, err)
	}
	return key, true, nil
}

func readMasterKeyFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := decodeMasterKey(string(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}
