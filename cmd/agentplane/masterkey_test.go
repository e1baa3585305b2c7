package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func testKeyBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	// Force characters that differ between the standard and URL alphabets.
	if n > 1 {
		b[0], b[1] = 0xfb, 0xff
	}
	return b
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestMasterKeyFromVariable(t *testing.T) {
	t.Parallel()
	key := testKeyBytes(32)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		got, err := loadMasterKey(config{MasterKey: " " + enc.EncodeToString(key) + "\n", DataDir: t.TempDir()}, discardLogger())
		require.NoError(t, err)
		require.Equal(t, key, got)
	}
	// A configured key wins in dev mode too, and no file is written.
	dir := t.TempDir()
	got, err := loadMasterKey(config{MasterKey: base64.StdEncoding.EncodeToString(key), Dev: true, DataDir: dir}, discardLogger())
	require.NoError(t, err)
	require.Equal(t, key, got)
	require.NoFileExists(t, filepath.Join(dir, masterKeyFile))
}

func TestMasterKeyRejectsBadValuesNamingTheVariable(t *testing.T) {
	t.Parallel()
	for name, value := range map[string]string{
		"not base64":   "this is not base64!",
		"16 bytes":     base64.StdEncoding.EncodeToString(testKeyBytes(16)),
		"31 bytes":     base64.StdEncoding.EncodeToString(testKeyBytes(31)),
		"33 bytes":     base64.StdEncoding.EncodeToString(testKeyBytes(33)),
		"hex, not b64": strings.Repeat("ab", 32),
	} {
		t.Run(name, func(t *testing.T) {
			for _, dev := range []bool{false, true} {
				_, err := loadMasterKey(config{MasterKey: value, Dev: dev, DataDir: t.TempDir()}, discardLogger())
				require.ErrorContains(t, err, "AGENTPLANE_MASTER_KEY")
				require.NotContains(t, err.Error(), value, "the error never echoes the key")
			}
		})
	}
}

func TestMasterKeyRequiredInProduction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := loadMasterKey(config{DataDir: dir}, discardLogger())
	require.ErrorContains(t, err, "AGENTPLANE_MASTER_KEY")
	require.NoFileExists(t, filepath.Join(dir, masterKeyFile), "production never generates a key")
}

func TestDevMasterKeyFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := config{Dev: true, DataDir: dir}

	key, err := loadMasterKey(cfg, logger)
	require.NoError(t, err)
	require.Len(t, key, 32)
	path := filepath.Join(dir, masterKeyFile)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, base64.StdEncoding.EncodeToString(key)+"\n", string(raw))
	require.Contains(t, logs.String(), "level=WARN")
	require.Contains(t, logs.String(), "DEVELOPMENT ONLY")
	require.NotContains(t, logs.String(), strings.TrimSpace(string(raw)), "the key is never logged")

	again, err := loadMasterKey(cfg, logger)
	require.NoError(t, err)
	require.Equal(t, key, again, "the file is reused")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary files left behind")

	require.NoError(t, os.WriteFile(path, []byte("garbage"), 0o600))
	_, err = loadMasterKey(cfg, logger)
	require.ErrorContains(t, err, "AGENTPLANE_MASTER_KEY")
	require.ErrorContains(t, err, path)
}

func TestDevMasterKeyConcurrentStarts(t *testing.T) {
	t.Parallel()
	cfg := config{Dev: true, DataDir: t.TempDir()}
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := loadMasterKey(cfg, discardLogger())
			if err == nil {
				keys[i] = k
			}
		})
	}
	wg.Wait()
	for _, k := range keys {
		require.Len(t, k, 32)
		require.Equal(t, keys[0], k, "every process gets the same key")
	}
}

func TestConfigReadsMasterKey(t *testing.T) {
	clearConfigEnv(t)
	t.Setenv("AGENTPLANE_MASTER_KEY", "from-env")
	c, err := parseConfig(nil)
	require.NoError(t, err)
	require.Equal(t, "from-env", c.MasterKey)
	c, err = parseConfig([]string{"--master-key", "from-flag"})
	require.NoError(t, err)
	require.Equal(t, "from-flag", c.MasterKey)
}
