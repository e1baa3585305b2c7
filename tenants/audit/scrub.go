package audit

import "strings"

// redacted replaces the value of every secret-looking key in a diff.
const redacted = "[redacted]"

// secretSubstrings and secretKeys decide which diff keys hold secrets. The
// rule errs towards hiding: a redacted harmless value costs an operator some
// detail, a stored secret is a leak that no later fix removes from backups.
var (
	secretSubstrings = []string{"password", "secret", "token"}
	secretKeys       = map[string]bool{"key": true, "value": true, "api_key": true}
)

// scrub replaces, in place and at any depth, the value under every
// secret-looking key with "[redacted]". It is defence in depth: callers are
// already required never to put secrets in a diff.
func scrub(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if isSecretKey(k) {
				x[k] = redacted
				continue
			}
			x[k] = scrub(e)
		}
	case []any:
		for i, e := range x {
			x[i] = scrub(e)
		}
	}
	return v
}

func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	if secretKeys[k] {
		return true
	}
	for _, s := range secretSubstrings {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
