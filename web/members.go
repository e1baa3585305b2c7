package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

func (c *Console) membersPage(w http.ResponseWriter, r *http.Request) {
	c.showMembers(w, r, http.StatusOK, ui.MembersView{})
}

// showMembers renders the members page around what a form left in v: its
// notice and the values to keep in the invite form.
func (c *Console) showMembers(w http.ResponseWriter, r *http.Request, status int, v ui.MembersView) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	page, err := c.deps.Tenants.ListMembers(ctx, a, tenants.Page{Limit: listLimit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v.Tenant = a.Tenant.Slug
	v.CanWrite = c.can(ctx, policy.MemberWrite)
	v.Roles = grantable(a)
	if v.Form.Role == "" {
		v.Form.Role = string(policy.RoleViewer) // least privilege unless chosen
	}
	for _, m := range page.Members {
		v.Members = append(v.Members, ui.MemberRow{
			ID: m.ID.String(), Email: m.Email, Role: string(m.Role), Joined: fmtDate(m.CreatedAt),
			Editable: v.CanWrite && canGrant(a, m.Role),
		})
	}
	v.NextPage = nextPage(ui.TenantPath(v.Tenant, sectionMembers), r.URL.Query(), page.NextCursor)
	c.render(w, r, status, "Members", sectionMembers, ui.MembersPage(v))
}

func (c *Console) addMember(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	form := ui.InviteForm{Email: strings.TrimSpace(r.PostFormValue("email")), Role: r.PostFormValue("role")}
	role, err := policy.ParseRole(form.Role)
	if err != nil {
		c.showMembers(w, r, http.StatusUnprocessableEntity, ui.MembersView{Form: form, Notice: invalid("role", "choose one of the listed roles")})
		return
	}
	var password *string
	if p := r.PostFormValue("password"); p != "" {
		password = &p
	}
	m, err := c.deps.Tenants.AddMember(ctx, visitFrom(ctx).access, tenants.AddMemberInput{Email: form.Email, Role: role, Password: password})
	if err != nil {
		status, n := c.describe(ctx, err)
		c.showMembers(w, r, status, ui.MembersView{Form: form, Notice: n})
		return
	}
	c.showMembers(w, r, http.StatusOK, ui.MembersView{Notice: done(fmt.Sprintf("Added %s as %s.", m.Email, m.Role))})
}

func (c *Console) updateMember(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, ok := c.pathID(w, r, "member")
	if !ok {
		return
	}
	role, err := policy.ParseRole(r.PostFormValue("role"))
	if err != nil {
		c.showMembers(w, r, http.StatusUnprocessableEntity, ui.MembersView{Notice: invalid("role", "choose one of the listed roles")})
		return
	}
	m, err := c.deps.Tenants.UpdateMemberRole(ctx, visitFrom(ctx).access, id, role)
	if err != nil {
		status, n := c.describe(ctx, err)
		c.showMembers(w, r, status, ui.MembersView{Notice: n})
		return
	}
	c.showMembers(w, r, http.StatusOK, ui.MembersView{Notice: done(fmt.Sprintf("%s is now %s.", m.Email, m.Role))})
}

func (c *Console) removeMember(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, ok := c.pathID(w, r, "member")
	if !ok {
		return
	}
	if err := c.deps.Tenants.RemoveMember(ctx, visitFrom(ctx).access, id); err != nil {
		status, n := c.describe(ctx, err)
		c.showMembers(w, r, status, ui.MembersView{Notice: n})
		return
	}
	c.showMembers(w, r, http.StatusOK, ui.MembersView{Notice: done("Member removed.")})
}

// pathID parses a UUID path parameter; anything else is a 404, as an id
// that cannot exist is simply not found.
func (c *Console) pathID(w http.ResponseWriter, r *http.Request, name string) (uuid.UUID, bool) {
	id, err := uuid.Parse(chi.URLParam(r, name))
	if err != nil {
		c.notFound(w, r)
		return uuid.UUID{}, false
	}
	return id, true
}
