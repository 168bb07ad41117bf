package registry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/retry"
)

// Defaults of Config.
const (
	DefaultNotFoundTTL = time.Minute
	DefaultTimeout     = 5 * time.Second
)

// MaxReferenceDepth bounds the chain of schema references followed.
const MaxReferenceDepth = 32

// Config configures a Client.
type Config struct {
	// URLs are the registry's base URLs, tried in turn on failure. A URL's
	// userinfo (user:pass@) is used as basic auth when Username is empty.
	URLs []string
	// Username and Password, when Username is set, are sent as basic auth.
	Username, Password string
	// BearerToken, when set, is sent as an Authorization: Bearer header.
	// It excludes Username.
	BearerToken string
	// TLS configures https connections (nil: Go's defaults).
	TLS *tls.Config
	// Timeout bounds one HTTP request. Default DefaultTimeout.
	Timeout time.Duration
	// Retry governs retries while the registry is unavailable; the zero
	// value is retry's defaults. When it gives up the call returns an
	// *UnavailableError.
	Retry retry.Policy
	// NotFoundTTL is how long a 404 is remembered. Default
	// DefaultNotFoundTTL.
	NotFoundTTL time.Duration
	// Now is the clock for NotFoundTTL (default time.Now).
	Now func() time.Time
	// Setting names the registry's configuration in the text of an
	// *AuthError, the error that is the configuration's fault (default
	// "schema registry"; the job file's is "schema_registry").
	Setting string
}

// String describes c with its credentials redacted.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("registry.Config{URLs: [")
	for i, u := range c.URLs {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(redactURL(u))
	}
	b.WriteString("]")
	if c.Username != "" {
		b.WriteString(", Username: " + c.Username + ", Password: [redacted]")
	}
	if c.BearerToken != "" {
		b.WriteString(", BearerToken: [redacted]")
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so %#v does not print credentials either.
func (c Config) GoString() string { return c.String() }

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "[unparsable URL]"
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	return u.String()
}

// Schema is a schema with its references resolved.
type Schema struct {
	ID   int
	GUID string
	Type sr.SchemaType
	Text string
	// References are every schema this one needs, transitively,
	// dependencies first, each once.
	References []Reference
}

// Reference is one referenced schema: for Avro, Name is the full name of
// the type it defines; for Protobuf, the import path; for JSON Schema, the
// $ref URL.
type Reference struct {
	Name    string
	Subject string
	Version int
	Type    sr.SchemaType
	Text    string
}

// ErrNotFound is matched (errors.Is) by a *NotFoundError.
var ErrNotFound = errors.New("schema not found in the registry")

// ErrUnavailable is matched (errors.Is) by an *UnavailableError.
var ErrUnavailable = errors.New("schema registry unavailable")

// ErrAuth is matched (errors.Is) by an *AuthError.
var ErrAuth = errors.New("the schema registry refused the credentials")

// AuthError reports that the registry answered 401 or 403: the credentials
// are missing, wrong or not allowed to read schemas. Every record fails
// alike and waiting does not mend it, so it is marked retry.Fatal (never
// retry.Retryable): the caller stops, naming Setting and the status. Its
// text never holds the password or the token.
type AuthError struct {
	Setting    string // Config.Setting
	What       string // "schema id 42", "subjects", …
	StatusCode int    // 401 or 403
	Reason     string // the registry's answer, scrubbed and bounded
}

func (e *AuthError) Error() string { return e.Setting + ": " + e.Refusal() }

// Refusal is the error's text without the setting's name, for a caller
// that names the setting itself.
func (e *AuthError) Refusal() string {
	return fmt.Sprintf("%s (HTTP %d %s) fetching %s: %s: check its username and password, or its bearer token",
		ErrAuth.Error(), e.StatusCode, http.StatusText(e.StatusCode), e.What, e.Reason)
}

// Is makes errors.Is(err, ErrAuth) true.
func (e *AuthError) Is(target error) bool { return target == ErrAuth }

// maxReason bounds the registry's answer quoted in an *AuthError (a proxy
// may answer with a whole HTML page).
const maxReason = 200

// authError returns the fatal *AuthError for a 401 or 403 answer, else
// nil.
func (c *Client) authError(what string, err error) error {
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized && re.StatusCode != http.StatusForbidden {
		return nil
	}
	reason := strings.ToValidUTF8(c.scrub(strings.TrimSpace(re.Error())), "?")
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "") + "…"
	}
	if reason == "" {
		reason = "no reason given"
	}
	return retry.Fatal(&AuthError{Setting: c.cfg.Setting, What: what, StatusCode: re.StatusCode, Reason: reason})
}

// NotFoundError reports a schema id, GUID or reference the registry does not
// know: the record that names it cannot be decoded.
type NotFoundError struct {
	What   string // "schema id 42", "schema guid …", "reference …"
	Reason string
}

func (e *NotFoundError) Error() string {
	return ErrNotFound.Error() + ": " + e.What + ": " + e.Reason
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// UnavailableError reports that the registry could not answer: the record
// is fine, it must wait.
type UnavailableError struct {
	What string
	Err  error
}

func (e *UnavailableError) Error() string {
	return ErrUnavailable.Error() + " fetching " + e.What + ": " + e.Err.Error()
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Err }

// Client fetches and caches schemas.
type Client struct {
	cfg     Config
	clients []*sr.Client // one per URL, so a failing URL is left for the next
	next    atomic.Uint32
	secrets []string

	mu    sync.Mutex
	byID  map[string]*entry // "id:42" / "guid:…"
	byRef map[string]*entry // "subject\x00version"
	// Expired 404s are swept once notFounds reaches sweepAt, so that a
	// topic of ever new unknown ids does not grow the maps without bound.
	notFounds, sweepAt int
}

// minSweep is the fewest 404s cached between two sweeps.
const minSweep = 64

type entry struct {
	done    chan struct{} // closed once schema/err are set
	schema  *Schema
	ref     *sr.SubjectSchema
	err     error     // a *NotFoundError, cached until expires
	expires time.Time // for err
}

// Validate reports the settings of c that cannot work, each naming its
// field (fielderr: urls, urls[i], bearer_token): the one copy of these
// rules, which New applies and the job file's schema_registry block maps
// onto its own fields. It reads nothing and connects nowhere.
func (c Config) Validate() error {
	var errs []error
	if len(c.URLs) == 0 {
		errs = append(errs, fielderr.New("urls", "at least one URL is required: the registry's base URL, such as http://localhost:8081"))
	}
	for i, raw := range c.URLs {
		if _, err := ParseURL(raw); err != nil {
			errs = append(errs, fielderr.New(fmt.Sprintf("urls[%d]", i), "%s is %v", fielderr.Quote(redactURL(raw)), err))
		}
	}
	if c.BearerToken != "" && c.Username != "" {
		errs = append(errs, fielderr.New("bearer_token", "set a username or a bearer token, not both"))
	}
	return errors.Join(errs...)
}

// New checks cfg (Validate) and returns a Client.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.NotFoundTTL <= 0 {
		cfg.NotFoundTTL = DefaultNotFoundTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Setting == "" {
		cfg.Setting = "schema registry"
	}
	c := &Client{cfg: cfg, byID: map[string]*entry{}, byRef: map[string]*entry{}}
	for i, raw := range cfg.URLs {
		u, _ := ParseURL(raw) // checked by Validate
		user, pass := cfg.Username, cfg.Password
		if u.User != nil {
			if user == "" && cfg.BearerToken == "" {
				user = u.User.Username()
				pass, _ = u.User.Password()
			}
			u.User = nil
		}
		opts := []sr.ClientOpt{
			sr.URLs(u.String()),
			sr.HTTPClient(&http.Client{Timeout: cfg.Timeout}),
			sr.UserAgent("signalbox"),
		}
		if cfg.TLS != nil {
			opts = append(opts, sr.DialTLSConfig(cfg.TLS))
		}
		if user != "" {
			opts = append(opts, sr.BasicAuth(user, pass))
			c.secrets = append(c.secrets, pass)
		}
		if cfg.BearerToken != "" {
			opts = append(opts, sr.BearerToken(cfg.BearerToken))
			c.secrets = append(c.secrets, cfg.BearerToken)
		}
		cl, err := sr.NewClient(opts...)
		if err != nil {
			return nil, fmt.Errorf("registry: url %d (%s): %v", i+1, redactURL(raw), err)
		}
		c.clients = append(c.clients, cl)
	}
	return c, nil
}

// ParseURL parses raw as New takes a URL: http(s), with a host.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("not an http(s) URL with a host")
	}
	return u, nil
}

// String describes the client with its credentials redacted.
func (c *Client) String() string { return c.cfg.String() }

// ByID returns the schema with registry id id.
func (c *Client) ByID(ctx context.Context, id int) (*Schema, error) {
	return c.cached(ctx, c.byID, "id:"+strconv.Itoa(id), func(ctx context.Context) (*Schema, *sr.SubjectSchema, error) {
		var s sr.Schema
		err := c.call(ctx, "schema id "+strconv.Itoa(id), func(ctx context.Context, cl *sr.Client) (err error) {
			s, err = cl.SchemaByID(ctx, id)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		out, err := c.resolve(ctx, s)
		if out != nil {
			out.ID = id
		}
		return out, nil, err
	})
}

// ByGUID returns the schema with GUID guid (the header framing's id).
func (c *Client) ByGUID(ctx context.Context, guid string) (*Schema, error) {
	return c.cached(ctx, c.byID, "guid:"+guid, func(ctx context.Context) (*Schema, *sr.SubjectSchema, error) {
		var s sr.SubjectSchema
		err := c.call(ctx, "schema guid "+guid, func(ctx context.Context, cl *sr.Client) (err error) {
			s, err = cl.SchemaByGUID(ctx, guid)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		out, err := c.resolve(ctx, s.Schema)
		if out != nil {
			out.ID, out.GUID = s.ID, guid
		}
		return out, nil, err
	})
}

// cached returns the cached result for key, or runs fetch once for all
// concurrent callers and caches what it returns (unless unavailable).
func (c *Client) cached(ctx context.Context, m map[string]*entry, key string, fetch func(context.Context) (*Schema, *sr.SubjectSchema, error)) (*Schema, error) {
	e, err := c.cachedEntry(ctx, m, key, fetch)
	if err != nil {
		return nil, err
	}
	return e.schema, nil
}

func (c *Client) cachedEntry(ctx context.Context, m map[string]*entry, key string, fetch func(context.Context) (*Schema, *sr.SubjectSchema, error)) (*entry, error) {
	for {
		c.mu.Lock()
		e, ok := m[key]
		if ok {
			c.mu.Unlock()
			select {
			case <-e.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if e.err == nil {
				return e, nil
			}
			if errors.Is(e.err, ErrNotFound) && c.cfg.Now().Before(e.expires) {
				return nil, e.err
			}
			// Expired or unavailable: drop it (if still there) and fetch anew.
			c.mu.Lock()
			if m[key] == e {
				delete(m, key)
			}
			c.mu.Unlock()
			continue
		}
		e = &entry{done: make(chan struct{})}
		m[key] = e
		c.mu.Unlock()

		e.schema, e.ref, e.err = fetch(ctx)
		switch {
		case errors.Is(e.err, ErrNotFound):
			e.expires = c.cfg.Now().Add(c.cfg.NotFoundTTL)
			c.mu.Lock()
			if c.notFounds++; c.notFounds >= c.sweepAt {
				c.sweep(e)
			}
			c.mu.Unlock()
		case e.err != nil:
			c.mu.Lock()
			delete(m, key) // never cache unavailability
			c.mu.Unlock()
		}
		close(e.done)
		if e.err != nil {
			return nil, e.err
		}
		return e, nil
	}
}

// sweep drops the expired 404s of both maps (fresh is one being stored) and
// sets the next sweep after as many more 404s as entries remain, at least
// minSweep: amortized O(1) per 404. c.mu is held.
func (c *Client) sweep(fresh *entry) {
	now := c.cfg.Now()
	for _, m := range []map[string]*entry{c.byID, c.byRef} {
		for key, e := range m {
			if e == fresh {
				continue
			}
			select {
			case <-e.done: // e.err and e.expires are set
				if e.err != nil && !now.Before(e.expires) {
					delete(m, key)
				}
			default: // being fetched
			}
		}
	}
	c.notFounds, c.sweepAt = 0, max(minSweep, len(c.byID)+len(c.byRef))
}

// call runs fn against the registry under the retry policy, classifying
// its errors (invariants 3, 4 and 5).
func (c *Client) call(ctx context.Context, what string, fn func(context.Context, *sr.Client) error) error {
	var final error // a 404 or a 401/403: not retried
	err := c.cfg.Retry.Do(ctx, func(ctx context.Context) error {
		i := c.next.Load()
		err := fn(ctx, c.clients[int(i)%len(c.clients)])
		if err == nil {
			return nil
		}
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			final = &NotFoundError{What: what, Reason: c.scrub(fmt.Sprintf("404 (code %d): %s", re.ErrorCode, re.Error()))}
			return final
		}
		if final = c.authError(what, err); final != nil {
			return final
		}
		c.next.CompareAndSwap(i, i+1) // leave a failing URL for the next one
		return retry.Retryable(err)
	})
	switch {
	case err == nil:
		return nil
	case final != nil && errors.Is(err, final):
		return final
	case ctx.Err() != nil:
		return ctx.Err() // the caller gave up: neither the record's fault nor an outage to report
	}
	return &UnavailableError{What: what, Err: retry.Retryable(errors.New(c.scrub(err.Error())))}
}

// scrub removes the credentials from an error text.
func (c *Client) scrub(s string) string {
	for _, secret := range c.secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// builtinImport reports a Protobuf import the decoder ships itself.
func builtinImport(name string) bool {
	return strings.HasPrefix(name, "google/protobuf/") || strings.HasPrefix(name, "google/type/") || strings.HasPrefix(name, "confluent/")
}

// resolve fetches s's references, transitively (invariant 7).
func (c *Client) resolve(ctx context.Context, s sr.Schema) (*Schema, error) {
	out := &Schema{Type: s.Type, Text: s.Schema}
	seen := map[string]bool{}
	var walk func(refs []sr.SchemaReference, typ sr.SchemaType, depth int, path []string) error
	walk = func(refs []sr.SchemaReference, typ sr.SchemaType, depth int, path []string) error {
		for _, r := range refs {
			if typ == sr.TypeProtobuf && builtinImport(r.Name) {
				continue
			}
			key := r.Subject + "\x00" + strconv.Itoa(r.Version)
			if seen[key] {
				continue
			}
			for _, p := range path {
				if p == key {
					return &NotFoundError{What: "reference " + r.Name, Reason: "reference cycle through subject " + r.Subject}
				}
			}
			if depth >= MaxReferenceDepth {
				return &NotFoundError{What: "reference " + r.Name, Reason: fmt.Sprintf("references nest deeper than %d", MaxReferenceDepth)}
			}
			ref, err := c.reference(ctx, r)
			if err != nil {
				return err
			}
			if err := walk(ref.References, ref.Type, depth+1, append(path, key)); err != nil {
				return err
			}
			seen[key] = true
			out.References = append(out.References, Reference{Name: r.Name, Subject: r.Subject, Version: ref.Version, Type: ref.Type, Text: ref.Schema.Schema})
		}
		return nil
	}
	if err := walk(s.References, s.Type, 0, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// reference fetches one subject version, cached (a subject version is
// immutable) unless it names "latest".
func (c *Client) reference(ctx context.Context, r sr.SchemaReference) (*sr.SubjectSchema, error) {
	what := fmt.Sprintf("reference %s (subject %s version %d)", r.Name, r.Subject, r.Version)
	fetch := func(ctx context.Context) (*Schema, *sr.SubjectSchema, error) {
		var ss sr.SubjectSchema
		err := c.call(ctx, what, func(ctx context.Context, cl *sr.Client) (err error) {
			ss, err = cl.SchemaByVersion(ctx, r.Subject, r.Version)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		return nil, &ss, nil
	}
	if r.Version <= 0 {
		_, ss, err := fetch(ctx)
		return ss, err
	}
	e, err := c.cachedEntry(ctx, c.byRef, r.Subject+"\x00"+strconv.Itoa(r.Version), fetch)
	if err != nil {
		return nil, err
	}
	return e.ref, nil
}

// Ping asks the registry for its subjects, once per URL at most and without
// Config.Retry: nil when one answers, else the fatal *AuthError of a URL
// that answered 401 or 403, else the last URL's error (an
// *UnavailableError), credentials removed; or ctx's.
func (c *Client) Ping(ctx context.Context) error {
	var err, auth error
	for _, cl := range c.clients {
		if _, err = cl.Subjects(ctx); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if a := c.authError("subjects", err); a != nil && auth == nil {
			auth = a
		}
	}
	if auth != nil {
		return auth
	}
	return &UnavailableError{What: "subjects", Err: retry.Retryable(errors.New(c.scrub(err.Error())))}
}
