package web

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"time"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

// sessionCookie holds the session token; only its hash is stored. The
// River UI guard in api reads the same cookie.
const sessionCookie = tenants.SessionCookie

// visit is what the middleware learned about a logged-in request: the
// session, the principal, and, under /t/{tenant}, the resolved access.
type visit struct {
	session   tenants.Session
	principal policy.Principal
	// access is zero outside tenant routes.
	access tenants.Access
}

type visitKey struct{}

// visitFrom returns the request's visit. Handlers behind requireSession
// always have one.
func visitFrom(ctx context.Context) *visit {
	v, _ := ctx.Value(visitKey{}).(*visit)
	return v
}

// requireSession loads the session named by the cookie, or sends the
// browser to the login page.
func (c *Console) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, ok := c.session(w, r)
		if !ok {
			c.clearCookie(w, sessionCookie)
			redirect(w, r, ui.Path("/login"))
			return
		}
		v := &visit{session: sess, principal: sess.User.Principal()}
		ctx := context.WithValue(r.Context(), visitKey{}, v)
		ctx = policy.WithPrincipal(ctx, v.principal)
		ctx = ui.WithCSRFToken(ctx, sess.CSRFToken)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// session returns the live session of the request's cookie. A lookup
// failure other than "unknown or expired" is logged and treated as logged
// out, which is the safe side.
func (c *Console) session(w http.ResponseWriter, r *http.Request) (tenants.Session, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return tenants.Session{}, false
	}
	sess, err := c.deps.Tenants.SessionByToken(r.Context(), ck.Value)
	if err != nil {
		if !errors.Is(err, tenants.ErrUnauthenticated) {
			c.log.ErrorContext(r.Context(), "console session lookup", "error", err)
		}
		return tenants.Session{}, false
	}
	return sess, true
}

// checkCSRF refuses a state-changing request whose token (htmx header or
// form field) is not the session's.
func (c *Console) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isSafeMethod(r.Method) {
			next.ServeHTTP(w, r)
			return
		}
		limitBody(w, r)
		v := visitFrom(r.Context())
		if !tokenMatches(submittedToken(r), v.session.CSRFToken) {
			c.csrfRefused(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isSafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// submittedToken reads the token from the htmx header or, for plain forms,
// the form field.
func submittedToken(r *http.Request) string {
	if t := r.Header.Get(ui.CSRFHeader); t != "" {
		return t
	}
	return r.PostFormValue(ui.CSRFFieldName)
}

// tokenMatches compares in constant time; an empty expected token never
// matches, so a broken session cannot disable the check.
func tokenMatches(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (c *Console) csrfRefused(w http.ResponseWriter, r *http.Request) {
	c.errorPage(w, r, http.StatusForbidden, "Request refused",
		"The form's security token is missing or out of date. Reload the page and try again.")
}

// setCookie writes a console cookie with the common attributes.
func (c *Console) setCookie(w http.ResponseWriter, name, value string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: ui.Prefix, Expires: expires,
		MaxAge: int(time.Until(expires).Seconds()), HttpOnly: true,
		Secure: c.deps.SecureCookies, SameSite: http.SameSiteLaxMode,
	})
}

func (c *Console) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: ui.Prefix, MaxAge: -1, HttpOnly: true,
		Secure: c.deps.SecureCookies, SameSite: http.SameSiteLaxMode,
	})
}

// maxFormBytes bounds every console form; none needs more.
const maxFormBytes = 64 << 10

func limitBody(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	}
}

// redirect sends the browser to url: with HX-Redirect for htmx requests,
// which would otherwise follow a 303 inside the XHR and swap the target
// page into the fragment slot.
func redirect(w http.ResponseWriter, r *http.Request, url string) {
	if isHTMX(r) {
		w.Header().Set("HX-Redirect", url)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, url, http.StatusSeeOther)
}
