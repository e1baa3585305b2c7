package audit

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/tenants/audit/internal/auditdb"
)

// TestHashGolden pins the canonical encoding: if it fails, the change would
// make every stored chain fail Verify.
func TestHashGolden(t *testing.T) {
	t.Parallel()
	row := auditdb.AuditEvent{
		TenantID:   uuid.MustParse("0192d2c4-0000-7000-8000-000000000001"),
		Seq:        42,
		ID:         uuid.MustParse("0192d2c4-0000-7000-8000-0000000000aa"),
		ActorKind:  "user",
		ActorID:    "user-1",
		Action:     "member.create",
		TargetKind: "member",
		TargetID:   "m-1",
		RequestID:  "req-1",
		Diff:       json.RawMessage(`{"role": "admin", "email": "a@example.com", "n": 1.50, "tags": ["<x>", "é"]}`),
		CreatedAt:  time.Date(2025, 6, 7, 10, 11, 12, 123456000, time.FixedZone("CEST", 2*3600)),
		PrevHash:   bytes.Repeat([]byte{0xab}, 32),
	}
	diff, err := canonicalJSON(row.Diff)
	require.NoError(t, err)
	require.Equal(t, `{"email":"a@example.com","n":1.5,"role":"admin","tags":["<x>","é"]}`, string(diff))

	sum, err := hashRow(row)
	require.NoError(t, err)
	require.Equal(t, "e2e731a579ae3863ffa0af29862f0b451e094fe1f53c2caf63cca56603cba7d7", hex.EncodeToString(sum))
}

func TestNormalizeNumber(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0":                      "0",
		"-0":                     "0",
		"-0.0":                   "0",
		"1.50":                   "1.5",
		"1e2":                    "100",
		"1E+2":                   "100",
		"1.5e-3":                 "0.0015",
		"-12.340e1":              "-123.4",
		"1e21":                   "1000000000000000000000",
		"0.1":                    "0.1",
		"1e-7":                   "0.0000001",
		"123456789012345678901":  "123456789012345678901",
		"3.0000000000000000001":  "3.0000000000000000001",
		"2.5e-1":                 "0.25",
		"0.00000000000000000000": "0",
	} {
		got, err := normalizeNumber(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"1e1001", "1e-1001", "1e99999999999999999999"} {
		_, err := normalizeNumber(in)
		require.Error(t, err, in)
	}
}

func TestCanonicalJSONIgnoresSpelling(t *testing.T) {
	t.Parallel()
	// The second spelling is what jsonb returns for the first.
	a, err := canonicalJSON([]byte(`{"b":[1E2,{"y":0.50,"x":null}],"a":"\u00e9\n","aa":true}`))
	require.NoError(t, err)
	b, err := canonicalJSON([]byte(`{"a": "é\n", "b": [100, {"x": null, "y": 0.50}], "aa": true}`))
	require.NoError(t, err)
	require.Equal(t, string(a), string(b))
	require.Equal(t, `{"a":"é\n","aa":true,"b":[100,{"x":null,"y":0.5}]}`, string(a))

	_, err = canonicalJSON([]byte(`{"a":1} {"b":2}`))
	require.Error(t, err)
}

// FuzzCanonicalJSON checks that canonicalization is a fixed point and does
// not depend on whitespace or key order, which is what a jsonb round trip
// changes.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `"x"`, `-0`, `1e2`, `{"b":1,"a":[1.50,2e-3,{"k":"v"}]}`,
		`{"a":"\u2028<>&\"\\"}`, `[1E+308,-1e-308,123456789012345678901234567890]`,
		`{"a":{"a":{"a":[[],{},""]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c1, err := canonicalJSON(raw)
		if err != nil {
			return
		}
		require.True(t, json.Valid(c1), "%s", c1)
		c2, err := canonicalJSON(c1)
		require.NoError(t, err)
		require.Equal(t, string(c1), string(c2), "canonical form is a fixed point")

		v, err := decode(raw)
		require.NoError(t, err)
		indented, err := json.MarshalIndent(v, " ", "\t")
		require.NoError(t, err)
		c3, err := canonicalJSON(indented)
		require.NoError(t, err)
		require.Equal(t, string(c1), string(c3), "whitespace does not matter")
	})
}
