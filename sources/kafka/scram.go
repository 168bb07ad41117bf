package kafka

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// scram is a SCRAM client (RFC 5802) for sarama's SCRAMClient interface;
// sarama ships none, and the exchange is small enough to keep here.
type scram struct {
	newHash    func() hash.Hash
	user, pass string
	nonce      string
	clientBare string
	serverSig  []byte
	step       int
	done       bool
}

var (
	sha256Gen = sha256.New
	sha512Gen = sha512.New
)

func newScram(h func() hash.Hash) *scram { return &scram{newHash: h} }

func (s *scram) Begin(user, pass, _ string) error {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	s.user, s.pass = user, pass
	s.nonce = base64.RawStdEncoding.EncodeToString(b[:])
	s.step, s.done = 0, false
	return nil
}

func (s *scram) Done() bool { return s.done }

func (s *scram) Step(challenge string) (string, error) {
	s.step++
	switch s.step {
	case 1:
		name := strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s.user)
		s.clientBare = "n=" + name + ",r=" + s.nonce
		return "n,," + s.clientBare, nil
	case 2:
		return s.final(challenge)
	case 3:
		v, ok := strings.CutPrefix(challenge, "v=")
		if !ok {
			return "", fmt.Errorf("scram: server final message %q", challenge)
		}
		sig, err := base64.StdEncoding.DecodeString(v)
		if err != nil || subtle.ConstantTimeCompare(sig, s.serverSig) != 1 {
			return "", errors.New("scram: server signature does not match")
		}
		s.done = true
		return "", nil
	}
	return "", errors.New("scram: conversation already over")
}

func (s *scram) final(serverFirst string) (string, error) {
	var nonce, salt64, iters string
	for _, kv := range strings.Split(serverFirst, ",") {
		switch {
		case strings.HasPrefix(kv, "r="):
			nonce = kv[2:]
		case strings.HasPrefix(kv, "s="):
			salt64 = kv[2:]
		case strings.HasPrefix(kv, "i="):
			iters = kv[2:]
		}
	}
	if !strings.HasPrefix(nonce, s.nonce) {
		return "", errors.New("scram: server nonce does not extend the client nonce")
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil {
		return "", fmt.Errorf("scram: salt: %w", err)
	}
	n, err := strconv.Atoi(iters)
	if err != nil || n < 1 {
		return "", fmt.Errorf("scram: iteration count %q", iters)
	}
	salted, err := pbkdf2.Key(s.newHash, s.pass, salt, n, s.newHash().Size())
	if err != nil {
		return "", err
	}
	withoutProof := "c=biws,r=" + nonce
	authMsg := []byte(s.clientBare + "," + serverFirst + "," + withoutProof)
	clientKey := s.mac(salted, []byte("Client Key"))
	h := s.newHash()
	h.Write(clientKey)
	clientSig := s.mac(h.Sum(nil), authMsg)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ clientSig[i]
	}
	s.serverSig = s.mac(s.mac(salted, []byte("Server Key")), authMsg)
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), nil
}

func (s *scram) mac(key, msg []byte) []byte {
	m := hmac.New(s.newHash, key)
	m.Write(msg)
	return m.Sum(nil)
}
