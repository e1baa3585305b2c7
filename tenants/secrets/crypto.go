package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
)

// KeySize is the size in bytes of the master key and of every data key.
const KeySize = 32

// Additional data and key-derivation labels. Changing any of them makes
// every stored key or value unreadable, so each carries a version.
const (
	wrapLabel        = "agentplane/dek/v1|"
	sealLabel        = "agentplane/secret/v1|"
	fingerprintLabel = "agentplane/fingerprint/v1"
)

// newAEAD returns AES-256-GCM under key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	return cipher.NewGCM(block)
}

// seal encrypts plaintext under key with a random nonce, returning
// nonce || ciphertext.
func seal(key, plaintext, additional []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return aead.Seal(out, out, plaintext, additional), nil
}

// errOpen is returned by open for any authentication failure; callers turn
// it into ErrWrongMasterKey or ErrUnreadable.
var errOpen = errors.New("message authentication failed")

// open reverses seal.
func open(key, sealed, additional []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, errOpen
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], additional)
	if err != nil {
		return nil, errOpen
	}
	return plain, nil
}

// wrapAD is the additional data of a tenant's wrapped data key.
func wrapAD(tenantID uuid.UUID) []byte { return []byte(wrapLabel + tenantID.String()) }

// sealAD is the additional data of one secret version. Names cannot hold
// "|", so the encoding is unambiguous.
func sealAD(tenantID uuid.UUID, name string, version int) []byte {
	return []byte(sealLabel + tenantID.String() + "|" + name + "|" + strconv.Itoa(version))
}

// newDataKey makes a random data key and wraps it with master.
func newDataKey(master []byte, tenantID uuid.UUID) (key, wrapped []byte, err error) {
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, nil, fmt.Errorf("data key: %w", err)
	}
	wrapped, err = seal(master, key, wrapAD(tenantID))
	if err != nil {
		return nil, nil, fmt.Errorf("wrap data key: %w", err)
	}
	return key, wrapped, nil
}

// unwrap opens a tenant's wrapped data key.
func unwrap(master, wrapped []byte, tenantID uuid.UUID) ([]byte, error) {
	key, err := open(master, wrapped, wrapAD(tenantID))
	if errors.Is(err, errOpen) || (err == nil && len(key) != KeySize) {
		return nil, fmt.Errorf("tenant %s: %w", tenantID, ErrWrongMasterKey)
	}
	if err != nil {
		return nil, fmt.Errorf("unwrap data key of tenant %s: %w", tenantID, err)
	}
	return key, nil
}

// fingerprint identifies value within its tenant without revealing it. The
// HMAC key is derived from the data key rather than the data key itself, so
// the one key never serves two primitives.
func fingerprint(dataKey []byte, value string) string {
	sub := hmac.New(sha256.New, dataKey)
	sub.Write([]byte(fingerprintLabel))
	mac := hmac.New(sha256.New, sub.Sum(nil))
	mac.Write([]byte(value))
	return "sha256:" + hex.EncodeToString(mac.Sum(nil))[:12]
}
