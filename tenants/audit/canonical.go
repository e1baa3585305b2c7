package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/tenants/audit/internal/auditdb"
)

// genesisHash is the prev_hash of a tenant's first event.
var genesisHash [sha256.Size]byte

// createdAtLayout renders created_at in UTC with the microsecond precision
// PostgreSQL keeps, so a stored time hashes the same after a round trip.
const createdAtLayout = "2006-01-02T15:04:05.000000Z07:00"

// maxExponent bounds the exponent of a JSON number in a diff: normalizing
// 1e1000000 would build a million-digit integer, and PostgreSQL's numeric
// could not store it anyway.
const maxExponent = 1000

// content is the hashed form of an event. Fields are in alphabetical order so
// the encoding is "JSON with sorted keys". Never rename, reorder or add
// fields: every stored hash depends on these exact bytes (see the golden test).
type content struct {
	Action     string          `json:"action"`
	ActorID    string          `json:"actor_id"`
	ActorKind  string          `json:"actor_kind"`
	CreatedAt  string          `json:"created_at"`
	Diff       json.RawMessage `json:"diff"`
	ID         string          `json:"id"`
	RequestID  string          `json:"request_id"`
	Seq        int64           `json:"seq"`
	TargetID   string          `json:"target_id"`
	TargetKind string          `json:"target_kind"`
	TenantID   string          `json:"tenant_id"`
}

// hashRow computes SHA-256(prev_hash || canonical content) of a row. Record
// and Verify both call it, so they cannot disagree on the encoding.
func hashRow(row auditdb.AuditEvent) ([]byte, error) {
	diff, err := canonicalJSON(row.Diff)
	if err != nil {
		return nil, err
	}
	b, err := encode(content{
		Action:     row.Action,
		ActorID:    row.ActorID,
		ActorKind:  row.ActorKind,
		CreatedAt:  row.CreatedAt.UTC().Format(createdAtLayout),
		Diff:       diff,
		ID:         row.ID.String(),
		RequestID:  row.RequestID,
		Seq:        row.Seq,
		TargetID:   row.TargetID,
		TargetKind: row.TargetKind,
		TenantID:   row.TenantID.String(),
	})
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write(row.PrevHash)
	h.Write(b)
	return h.Sum(nil), nil
}

// prepareDiff turns a caller's diff into the bytes Record stores: plain JSON
// (structs and times become what encoding/json makes of them), secrets
// scrubbed, canonically encoded.
func prepareDiff(diff map[string]any) ([]byte, error) {
	if diff == nil {
		return []byte("{}"), nil
	}
	raw, err := json.Marshal(diff)
	if err != nil {
		return nil, fmt.Errorf("encode diff: %w", err)
	}
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	return encodeCanonical(scrub(v))
}

// canonicalJSON re-encodes JSON so that every spelling of the same value
// gives the same bytes: keys sorted, no insignificant whitespace, numbers in
// minimal decimal form. This is what makes a hash survive jsonb, which
// reorders keys, adds spaces and rewrites 1e2 as 100.
func canonicalJSON(raw []byte) ([]byte, error) {
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	return encodeCanonical(v)
}

// decode reads exactly one JSON value, keeping numbers as their literal text
// so no precision is lost to float64.
func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode diff: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode diff: trailing data after JSON value")
	}
	return v, nil
}

func encodeCanonical(v any) ([]byte, error) {
	v, err := normalizeNumbers(v)
	if err != nil {
		return nil, err
	}
	return encode(v)
}

// encode marshals v without HTML escaping (the bytes are hashed, not
// embedded in pages) and without the encoder's trailing newline. Maps are
// encoded with sorted keys by encoding/json.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode canonical json: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// normalizeNumbers rewrites, in place, every json.Number in v to its
// minimal decimal form.
func normalizeNumbers(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		s, err := normalizeNumber(string(x))
		return json.Number(s), err
	case map[string]any:
		for k, e := range x {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	case []any:
		for i, e := range x {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	}
	return v, nil
}

// normalizeNumber writes a JSON number exactly, without exponent or trailing
// zeros: "1e2" → "100", "1.50" → "1.5", "-0" → "0". PostgreSQL's numeric
// prints the same value the same way, but we do not rely on it.
func normalizeNumber(s string) (string, error) {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(s[i+1:])
		if err != nil || exp > maxExponent || exp < -maxExponent {
			return "", fmt.Errorf("number %.40q: exponent out of range", s)
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "", fmt.Errorf("number %.40q: not a decimal number", s)
	}
	if r.IsInt() {
		return r.Num().String(), nil
	}
	// A decimal in lowest terms has denominator 2^a·5^b and needs exactly
	// max(a, b) fractional digits.
	d := new(big.Int).Set(r.Denom())
	twos := d.TrailingZeroBits()
	d.Rsh(d, twos)
	fives := uint(0)
	five, q, m := big.NewInt(5), new(big.Int), new(big.Int)
	for {
		q.QuoRem(d, five, m)
		if m.Sign() != 0 {
			break
		}
		d.Set(q)
		fives++
	}
	return r.FloatString(int(max(twos, fives))), nil
}

// storedTime truncates t to what timestamptz keeps (microseconds), so the
// hash Record computes equals the one Verify computes from the stored value.
func storedTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}
