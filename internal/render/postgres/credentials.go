package postgres

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// source is the seeded randomness of one purpose ("password/<user>",
// "salt/<user>", "ca"...): what one thing generates does not depend on what
// else is generated in the same render.
func source(seed [32]byte, purpose string) *rand.ChaCha8 {
	return rand.NewChaCha8(sha256.Sum256(append(seed[:], purpose...)))
}

const passwordLength = 24

// Password alphabets. ASCII leaves out the characters that need quoting in
// a URI, a shell or a connection string (space, quotes, backslash, '@', ':',
// '/', '?', '#', '%'), so that the Secret's values can be pasted as they are.
const (
	alphaNumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	asciiSymbols = "!$()*+,-.;<=>[]^_{|}~"
)

// generatePassword makes a password of the type spec.users[].password.type
// asks for.
func generatePassword(src *rand.ChaCha8, ascii bool) string {
	alphabet := alphaNumeric
	if ascii {
		alphabet += asciiSymbols
	}
	r := rand.New(src)
	b := make([]byte, passwordLength)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// scramIterations is PostgreSQL's default (scram_iterations).
const scramIterations = 4096

// scramVerifier is the SCRAM-SHA-256 verifier PostgreSQL stores for a
// password (RFC 5802, RFC 7677): the role is created with it, so the password
// itself never reaches the database or its logs.
func scramVerifier(password string, salt []byte, iterations int) string {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		panic(err) // only for parameters FIPS mode refuses; these are fixed
	}
	clientKey := hmacSHA256(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	serverKey := hmacSHA256(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(storedKey[:]), b64(serverKey))
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// verifies reports whether verifier is the SCRAM-SHA-256 verifier of
// password (with the salt and iterations it names).
func verifies(verifier, password string) bool {
	rest, ok := strings.CutPrefix(verifier, "SCRAM-SHA-256$")
	if !ok {
		return false
	}
	iterSalt, _, ok := strings.Cut(rest, "$")
	if !ok {
		return false
	}
	iter, salt64, ok := strings.Cut(iterSalt, ":")
	if !ok {
		return false
	}
	n, err := strconv.Atoi(iter)
	if err != nil || n < 1 {
		return false
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil {
		return false
	}
	return hmac.Equal([]byte(scramVerifier(password, salt, n)), []byte(verifier))
}

// credential is the password and verifier of a user: kept from its Secret
// when it has them, generated otherwise. A password changed in the Secret
// by hand (and its verifier removed or stale) gets a new verifier.
func credential(seed [32]byte, existing map[string][]byte, name string, ascii bool) (password, verifier string) {
	password = string(existing[KeyPassword])
	if password == "" {
		password = generatePassword(source(seed, "password/"+name), ascii)
	}
	verifier = string(existing[KeyVerifier])
	if verifier != "" && verifies(verifier, password) {
		return password, verifier
	}
	salt := make([]byte, 16)
	_, _ = source(seed, "salt/"+name).Read(salt) // never fails
	return password, scramVerifier(password, salt, scramIterations)
}
