package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

// memberForm finds the change-role form of the member with email.
func memberForm(doc *goquery.Document, email string) *goquery.Selection {
	return doc.Find(testID("member-row") + `[data-email="` + email + `"] form[hx-patch]`)
}

func TestMembersInviteChangeRemove(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "members")
	c, target := f.login(t, f.member(t, tn, "admin", policy.RoleAdmin))
	res, doc := c.get(target)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("invite-form")).Length())

	newbie := "newbie-" + f.suffix + "@example.com"
	res, doc = c.htmx(http.MethodPost, target, url.Values{"email": {newbie}, "role": {"developer"}, "password": {"long enough pw"}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, doc.Find(testID("flash")).Text(), newbie)
	form := memberForm(doc, newbie)
	require.Equal(t, "developer", form.Find("option[selected]").AttrOr("value", ""))

	// The invited user can sign in with the password given.
	_, err := f.svc.Login(t.Context(), newbie, "long enough pw")
	require.NoError(t, err)

	res, doc = c.htmx(http.MethodPatch, form.AttrOr("hx-patch", ""), url.Values{"role": {"viewer"}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "viewer", memberForm(doc, newbie).Find("option[selected]").AttrOr("value", ""))

	res, doc = c.htmx(http.MethodDelete, memberForm(doc, newbie).AttrOr("hx-patch", ""), nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("member-row")+`[data-email="`+newbie+`"]`).Length())
}

func TestMembersErrorsInline(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "members-err")
	owner := f.member(t, tn, "owner", policy.RoleOwner)
	f.member(t, tn, "admin", policy.RoleAdmin)
	admin, target := f.login(t, "admin-"+f.suffix+"@example.com")
	_, doc := admin.get(target)

	// An admin is not offered the owner role, and the owner's row is locked.
	require.Zero(t, doc.Find(testID("invite-form")+` option[value="owner"]`).Length())
	require.Zero(t, memberForm(doc, owner).Length())
	require.Equal(t, "owner", doc.Find(testID("member-row")+`[data-email="`+owner+`"] `+testID("member-role-text")).Text())

	// Forcing it anyway is refused inline, with the typed values kept.
	res, doc := admin.htmx(http.MethodPost, target, url.Values{"email": {"boss-" + f.suffix + "@example.com"}, "role": {"owner"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Equal(t, "role_escalation", doc.Find(testID("form-error")).AttrOr("data-code", ""))
	require.Equal(t, "boss-"+f.suffix+"@example.com", doc.Find(testID("invite-form")+` input[name="email"]`).AttrOr("value", ""))

	// The only owner cannot demote themselves.
	oc, _ := f.login(t, owner)
	_, doc = oc.get(target)
	res, doc = oc.htmx(http.MethodPatch, memberForm(doc, owner).AttrOr("hx-patch", ""), url.Values{"role": {"admin"}})
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Equal(t, "last_owner", doc.Find(testID("form-error")).AttrOr("data-code", ""))
	require.Equal(t, "owner", memberForm(doc, owner).Find("option[selected]").AttrOr("value", ""))

	// A developer may read members but sees no controls and cannot post.
	dc, _ := f.login(t, f.member(t, tn, "dev", policy.RoleDeveloper))
	res, doc = dc.get(target)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("invite-form")).Length())
	require.Zero(t, doc.Find("form[hx-patch]").Length())
	res, _ = dc.htmx(http.MethodPost, target, url.Values{"email": {"x-" + f.suffix + "@example.com"}, "role": {"viewer"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "audit")
	email := f.member(t, tn, "admin", policy.RoleAdmin)
	c, _ := f.login(t, email)
	keys := "/console/t/" + tn.Slug + "/api-keys"
	c.get(keys)
	for _, name := range []string{"one", "two", "three"} {
		res, _ := c.htmx(http.MethodPost, keys, url.Values{"name": {name}, "role": {"viewer"}})
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	audit := "/console/t/" + tn.Slug + "/audit"
	res, doc := c.get(audit)
	require.Equal(t, http.StatusOK, res.StatusCode)
	actions := doc.Find(testID("audit-row")).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-action", "") })
	require.Equal(t, []string{"api_key.create", "api_key.create", "api_key.create", "member.create", "tenant.create"}, actions, "newest first")
	require.Contains(t, doc.Find(testID("audit-row")).First().Text(), email, "actors are shown by name")

	res, doc = c.get(audit + "?action=member.*")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("audit-row")).Length())
	require.Equal(t, "member.*", doc.Find(`input[name="action"]`).AttrOr("value", ""))

	res, doc = c.get(audit + "?target_kind=api_key&cursor=garbage")
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "invalid_cursor", doc.Find(testID("form-error")).AttrOr("data-code", ""))
}

func TestAuditNextPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "audit-pages")
	c, _ := f.login(t, f.member(t, tn, "admin", policy.RoleAdmin))
	keys := "/console/t/" + tn.Slug + "/api-keys"
	c.get(keys)
	for range 50 { // with the tenant and member events, over a page
		res, _ := c.htmx(http.MethodPost, keys, url.Values{"name": {"k"}, "role": {"viewer"}})
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	_, doc := c.get("/console/t/" + tn.Slug + "/audit?target_kind=api_key")
	require.Equal(t, 50, doc.Find(testID("audit-row")).Length())
	require.Zero(t, doc.Find(testID("next-page")).Length(), "exactly one page of api_key events")

	_, doc = c.get("/console/t/" + tn.Slug + "/audit")
	next, ok := doc.Find(testID("next-page")).Attr("href")
	require.True(t, ok)
	_, doc = c.get(next)
	require.Equal(t, []string{"member.create", "tenant.create"}, doc.Find(testID("audit-row")).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-action", "") }))
}

func TestTenantsPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin, _ := f.login(t, f.user(t, "root", true))
	res, doc := admin.get("/console/tenants")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("nav-tenants")).Length())

	slug := "fresh-" + f.suffix
	res, doc = admin.htmx(http.MethodPost, "/console/tenants", url.Values{"slug": {slug}, "name": {"Fresh"}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("flash")).Length())
	res, doc = admin.htmx(http.MethodPost, "/console/tenants", url.Values{"slug": {slug}, "name": {"Again"}})
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Equal(t, "slug_taken", doc.Find(testID("form-error")).AttrOr("data-code", ""))

	// A platform admin may open any tenant without a membership.
	res, _ = admin.get("/console/t/" + slug + "/api-keys")
	require.Equal(t, http.StatusOK, res.StatusCode)

	// Tenant owners are not platform admins.
	tn := f.tenant(t, "not-platform")
	owner, _ := f.login(t, f.member(t, tn, "owner", policy.RoleOwner))
	res, doc = owner.get("/console/tenants")
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Zero(t, doc.Find(testID("nav-tenants")).Length())
	res, _ = owner.htmx(http.MethodPost, "/console/tenants", url.Values{"slug": {"owned-" + f.suffix}, "name": {"x"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
}
