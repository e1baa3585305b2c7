// Package secrets owns tenant secrets: named values (API keys of model
// providers, channel credentials) that agents use at run time and that
// people may set but never read back.
//
// Envelope encryption. Each tenant has one random 256-bit data key, created
// on its first secret and stored in tenant_data_keys wrapped by the process
// master key (AES-256-GCM, nonce || ciphertext, additional data
// "agentplane/dek/v1|<tenant id>", so a wrapped key copied to another
// tenant does not unwrap). Every secret version is sealed under its tenant's
// data key (AES-256-GCM, nonce || ciphertext) with additional data naming
// the tenant, the secret and the version, so a ciphertext copied to another
// row does not open.
//
// Fingerprints let people tell values apart without seeing them:
// "sha256:" + the first 12 hex digits of an HMAC-SHA256 keyed by a subkey of
// the tenant's data key. Equal values in one tenant share a fingerprint;
// nothing about the value can be checked without the data key.
//
// Invariants and rules:
//   - A value leaves this package only through Reveal, which the run
//     runtime calls; the API and console see Metadata only. Values are never
//     logged, never put in an audit diff, never part of an error.
//   - Names match NamePattern. Put appends a version (last + 1); rotation
//     keeps older versions, Delete removes every version of a name.
//   - Every write holds the tenant's data-key row locked until its
//     transaction ends, so versions are gap-free and first use creates
//     exactly one data key. Writes append their audit event in the same
//     transaction (tenants/audit), so take part in that order: call PutTx
//     and DeleteTx before recording other audit events in a shared
//     transaction.
//   - A data key that does not unwrap is ErrWrongMasterKey: the process is
//     misconfigured, and nothing is ever re-keyed or overwritten because of
//     it.
//   - Every query takes the tenant id, except CheckMasterKey's read of the
//     newest data key.
package secrets
