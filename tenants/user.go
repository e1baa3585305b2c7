package tenants

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/internal/tenantsdb"
)

// MinPasswordLen is the shortest password accepted.
const MinPasswordLen = 10

// User is a platform-wide login.
type User struct {
	ID            uuid.UUID
	Email         string
	PlatformAdmin bool
}

// Principal returns the user as a principal.
func (u User) Principal() policy.Principal {
	return policy.Principal{Kind: policy.KindUser, ID: u.ID.String(), Label: u.Email, PlatformAdmin: u.PlatformAdmin}
}

// EnsureUser creates the user when missing and (re)sets its password and
// platform-admin flag; dev seeding uses it.
func (s *Service) EnsureUser(ctx context.Context, email, password string, platformAdmin bool) (User, error) {
	email, err := normalizeEmail(email)
	if err != nil {
		return User{}, err
	}
	var out User
	err = s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		row, err := q.UserByEmail(ctx, email)
		if errors.Is(err, pgx.ErrNoRows) {
			row, err = s.createUserTx(ctx, tx, email, &password, platformAdmin)
			out = User{ID: row.ID, Email: row.Email, PlatformAdmin: row.PlatformAdmin}
			return err
		}
		if err != nil {
			return fmt.Errorf("look up user %s: %w", email, err)
		}
		hash, err := s.hashPassword(password)
		if err != nil {
			return err
		}
		if err := q.SetUserPassword(ctx, tenantsdb.SetUserPasswordParams{ID: row.ID, PasswordHash: &hash}); err != nil {
			return fmt.Errorf("set password of %s: %w", email, err)
		}
		if err := q.SetUserPlatformAdmin(ctx, tenantsdb.SetUserPlatformAdminParams{ID: row.ID, PlatformAdmin: platformAdmin}); err != nil {
			return fmt.Errorf("set platform admin of %s: %w", email, err)
		}
		out = User{ID: row.ID, Email: row.Email, PlatformAdmin: platformAdmin}
		return nil
	})
	return out, err
}

func (s *Service) createUserTx(ctx context.Context, tx pgx.Tx, email string, password *string, admin bool) (tenantsdb.User, error) {
	var hash *string
	if password != nil {
		h, err := s.hashPassword(*password)
		if err != nil {
			return tenantsdb.User{}, err
		}
		hash = &h
	}
	row, err := tenantsdb.New(tx).CreateUser(ctx, tenantsdb.CreateUserParams{
		ID: uuid.Must(uuid.NewV7()), Email: email, PasswordHash: hash, PlatformAdmin: admin,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		row, err = tenantsdb.New(tx).UserByEmail(ctx, email)
	}
	if err != nil {
		return tenantsdb.User{}, fmt.Errorf("create user %s: %w", email, err)
	}
	return row, nil
}

func (s *Service) hashPassword(pw string) (string, error) {
	if len(pw) < MinPasswordLen {
		return "", &InvalidError{Field: "password", Message: fmt.Sprintf("must be at least %d characters", MinPasswordLen)}
	}
	if len(pw) > 72 { // bcrypt's input limit; refuse rather than truncate
		return "", &InvalidError{Field: "password", Message: "must be at most 72 bytes"}
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), s.cfg.PasswordCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// SessionCookie names the cookie that carries a console session's token;
// the console sets it and the River UI guard reads it.
const SessionCookie = "agentplane_session"

// Session is a console login. Token goes into an HttpOnly cookie and is
// returned only by Login; the database keeps its SHA-256.
type Session struct {
	Token     string
	CSRFToken string
	User      User
	ExpiresAt time.Time
}

// dummyHash keeps a login for an unknown email as slow as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("agentplane-dummy-password"), bcrypt.DefaultCost)

// Login checks an email and password and opens a session.
func (s *Service) Login(ctx context.Context, email, password string) (Session, error) {
	bad := &AuthError{Code: "invalid_credentials", Message: "wrong email or password"}
	email = strings.ToLower(strings.TrimSpace(email))
	row, err := tenantsdb.New(s.pool).UserByEmail(ctx, email)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.PasswordHash == nil) {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return Session{}, bad
	}
	if err != nil {
		return Session{}, fmt.Errorf("login: %w", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(*row.PasswordHash), []byte(password)) != nil {
		return Session{}, bad
	}
	sess := Session{
		Token:     randomToken(),
		CSRFToken: randomToken(),
		User:      User{ID: row.ID, Email: row.Email, PlatformAdmin: row.PlatformAdmin},
		ExpiresAt: time.Now().Add(s.cfg.SessionTTL),
	}
	hash := sha256.Sum256([]byte(sess.Token))
	err = tenantsdb.New(s.pool).CreateSession(ctx, tenantsdb.CreateSessionParams{
		TokenHash: hash[:], UserID: row.ID, CsrfToken: sess.CSRFToken, ExpiresAt: sess.ExpiresAt,
	})
	if err != nil {
		return Session{}, fmt.Errorf("create session: %w", err)
	}
	return sess, nil
}

// SessionByToken returns the live session for a cookie token.
func (s *Service) SessionByToken(ctx context.Context, token string) (Session, error) {
	hash := sha256.Sum256([]byte(token))
	row, err := tenantsdb.New(s.pool).SessionByToken(ctx, hash[:])
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, &AuthError{Code: "session_expired", Message: "session expired or unknown"}
	}
	if err != nil {
		return Session{}, fmt.Errorf("look up session: %w", err)
	}
	return Session{
		CSRFToken: row.CsrfToken,
		User:      User{ID: row.UserID, Email: row.Email, PlatformAdmin: row.PlatformAdmin},
		ExpiresAt: row.ExpiresAt,
	}, nil
}

// Logout ends a session.
func (s *Service) Logout(ctx context.Context, token string) error {
	hash := sha256.Sum256([]byte(token))
	if err := tenantsdb.New(s.pool).DeleteSession(ctx, hash[:]); err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	return nil
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
