package kafka

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/signalbox/signalbox/embedded"
)

// ConnOpts authenticates with every SASL mechanism the Config names, and a
// wrong password is refused.
func TestConnOptsAuthenticate(t *testing.T) {
	for _, mech := range []string{SASLPlain, SASLScramSHA256, SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			c := startCluster(t, embedded.WithTopic("auth", 1), embedded.WithUser(mech, "alice", "s3cret"))
			ping := func(pass string) error {
				return pingAs(t, c, SASL{Mechanism: mech, User: "alice", Password: pass})
			}
			if err := ping("s3cret"); err != nil {
				t.Fatalf("right password: %v", err)
			}
			if err := ping("wrong"); err == nil {
				t.Fatal("a wrong password was accepted")
			}
		})
	}
}

// OAUTHBEARER: the broker is kfake with its SASL handshake and
// authentication taken over by a hook that accepts one bearer token, as an
// OAuth-enabled broker checks a JWT. A token file is read again at every
// authentication, so a rotated token is used by the next connection; a
// token the broker refuses fails the connection.
func TestConnOptsOAuthBearer(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("auth", 1))
	var mu sync.Mutex
	valid, seen := "tok-1", []string{}
	c.Kfake().ControlKey(int16(kmsg.SASLHandshake), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.Kfake().KeepControl()
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		if m := req.(*kmsg.SASLHandshakeRequest).Mechanism; m != SASLOAuthBearer {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		}
		return resp, nil, true
	})
	c.Kfake().ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.Kfake().KeepControl()
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		msg := string(req.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes)
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, msg)
		if msg != "n,,\x01auth=Bearer "+valid+"\x01\x01" { // RFC 7628's client first message
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		}
		return resp, nil, true
	})
	ping := func(s SASL) error { return pingAs(t, c, s) }
	file := filepath.Join(t.TempDir(), "token")
	write := func(tok string) {
		if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("tok-1")
	if err := ping(SASL{Mechanism: SASLOAuthBearer, TokenFile: file}); err != nil {
		t.Fatalf("the token file's token: %v", err)
	}
	mu.Lock()
	valid = "tok-2" // the issuer rotates the token
	mu.Unlock()
	if err := ping(SASL{Mechanism: SASLOAuthBearer, TokenFile: file}); err == nil {
		t.Fatal("a token the broker no longer accepts was accepted")
	}
	write("tok-2")
	if err := ping(SASL{Mechanism: SASLOAuthBearer, TokenFile: file}); err != nil {
		t.Fatalf("the rotated token, read again from the file: %v", err)
	}
	if err := ping(SASL{Mechanism: SASLOAuthBearer, Token: "tok-2"}); err != nil {
		t.Fatalf("a fixed token: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 4 {
		t.Fatalf("the broker saw %d authentications, want one per client at least: %q", len(seen), seen)
	}
}

// pingAs connects a client of ConnOpts with s to c and pings a broker.
func pingAs(t *testing.T, c *embedded.Cluster, s SASL) error {
	t.Helper()
	opts, err := Config{Brokers: c.Addrs(), Topics: []string{"auth"}, SASL: s}.ConnOpts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// A token file that is missing or empty is an error naming the file, at
// the authentication that reads it: no connection goes out with an empty
// token.
func TestOAuthBearerTokenFileErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{empty, filepath.Join(dir, "missing")} {
		if _, err := (SASL{Mechanism: SASLOAuthBearer, TokenFile: file}).bearer(context.Background()); err == nil ||
			!strings.Contains(err.Error(), "sasl.token_file") || !strings.Contains(err.Error(), file) {
			t.Errorf("token file %s: %v, want an error naming sasl.token_file and the file", file, err)
		}
	}
}
