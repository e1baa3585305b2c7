package web

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

// loginCSRFCookie is the double-submit token of the login form: there is
// no session yet to bind a token to, so the form must echo the cookie,
// which a cross-site page can neither read nor set.
const loginCSRFCookie = "agentplane_login_csrf"

// loginCSRFTTL bounds how long a login form stays usable.
const loginCSRFTTL = 2 * time.Hour

// loginPage shows the sign-in form, or skips it when already signed in.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.session(w, r); ok {
		http.Redirect(w, r, ui.Path("/"), http.StatusSeeOther)
		return
	}
	c.renderLogin(w, r, http.StatusOK, ui.LoginView{})
}

// renderLogin renders the form with a login token, reusing the cookie's so
// several open login tabs keep working.
func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, status int, v ui.LoginView) {
	token := ""
	if ck, err := r.Cookie(loginCSRFCookie); err == nil && len(ck.Value) >= 32 {
		token = ck.Value
	} else {
		token = newToken()
	}
	c.setCookie(w, loginCSRFCookie, token, time.Now().Add(loginCSRFTTL))
	r = r.WithContext(ui.WithCSRFToken(r.Context(), token))
	c.render(w, r, status, "Sign in", sectionNone, ui.LoginPage(v))
}

// login checks the token, the rate limits, then the password. The failure
// message never says which of email or password was wrong.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	limitBody(w, r)
	ck, err := r.Cookie(loginCSRFCookie)
	if err != nil || !tokenMatches(r.PostFormValue(ui.CSRFFieldName), ck.Value) {
		c.csrfRefused(w, r)
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	view := ui.LoginView{Email: email}
	if wait, ok := c.admitLogin(r, email); !ok {
		msg := "Login is unavailable right now. Try again in a minute."
		if wait > 0 {
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", fmt.Sprint(secs))
			msg = fmt.Sprintf("Too many login attempts. Try again in %d seconds.", secs)
		}
		view.Notice = ui.Notice{Error: true, Code: "rate_limited", Text: msg}
		c.renderLogin(w, r, http.StatusTooManyRequests, view)
		return
	}
	sess, err := c.deps.Tenants.Login(r.Context(), email, r.PostFormValue("password"))
	if errors.Is(err, tenants.ErrUnauthenticated) {
		view.Notice = ui.Notice{Error: true, Code: "invalid_credentials", Text: "Wrong email or password."}
		c.renderLogin(w, r, http.StatusUnauthorized, view)
		return
	}
	if err != nil {
		status, n := c.describe(r.Context(), err)
		view.Notice = n
		c.renderLogin(w, r, status, view)
		return
	}
	c.setCookie(w, sessionCookie, sess.Token, sess.ExpiresAt)
	c.clearCookie(w, loginCSRFCookie)
	target := c.landing(r.Context(), sess.User.Principal())
	if target == "" {
		target = ui.Path("/")
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// admitLogin asks the limiter about the client IP and the email. Both keys
// are always charged, so neither can be probed around the other. A limiter
// error refuses the login with wait 0: losing the brute-force guard is
// worse than a short outage of sign-in.
func (c *Console) admitLogin(r *http.Request, email string) (wait time.Duration, ok bool) {
	ok = true
	for _, key := range []string{"login:ip:" + clientIP(r), "login:email:" + email} {
		allowed, retry, err := c.deps.Limiter.Allow(r.Context(), key)
		if err != nil {
			c.log.ErrorContext(r.Context(), "console login limiter", slog.String("error", err.Error()))
			return 0, false
		}
		if !allowed {
			ok = false
			wait = max(wait, retry, time.Second)
		}
	}
	return wait, ok
}

// clientIP is the peer address. Behind a proxy the composition root must
// rewrite RemoteAddr from a trusted header (e.g. chi's RealIP); the console
// does not trust forwarding headers itself.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// logout ends the server-side session and drops the cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if err := c.deps.Tenants.Logout(r.Context(), ck.Value); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	c.clearCookie(w, sessionCookie)
	redirect(w, r, ui.Path("/login"))
}

func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
