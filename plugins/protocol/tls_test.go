package protocol

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
)

// setEnv puts one start's credentials into the test's environment, as the host does for a
// plugin.
func setEnv(t *testing.T, c *Credentials) {
	t.Helper()
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// handshake runs a TLS handshake between client and server configs over a loopback
// connection and returns each side's error. The server's error is the one that says
// whether it accepted the client (in TLS 1.3 the client finishes first).
func handshake(t *testing.T, client, server *tls.Config) (cerr, serr error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		s := tls.Server(b, server)
		err := s.Handshake()
		if err == nil {
			// Let the client read one byte: it learns here whether it was accepted.
			_, err = s.Write([]byte{1})
		}
		s.Close()
		done <- err
	}()
	c := tls.Client(a, client)
	cerr = c.Handshake()
	if cerr == nil {
		_, cerr = c.Read(make([]byte, 1))
	}
	c.Close()
	return cerr, <-done
}

func TestCredentialsHandshake(t *testing.T) {
	good, err := NewCredentials()
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCredentials()
	if err != nil {
		t.Fatal(err)
	}
	setEnv(t, good)
	server, err := ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{EnvTLSCert, EnvTLSKey, EnvTLSClientCert, envAutoMTLS} {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("ServerTLS left %s in the environment (%d bytes)", k, len(v))
		}
	}
	if cerr, serr := handshake(t, good.Config, server); cerr != nil || serr != nil {
		t.Fatalf("the host's own credentials: client %v, server %v", cerr, serr)
	}

	// A client without a certificate, or with another start's: the plugin refuses it.
	noCert := good.Config.Clone()
	noCert.Certificates = nil
	if _, serr := handshake(t, noCert, server); serr == nil || !strings.Contains(serr.Error(), "client didn't provide a certificate") {
		t.Errorf("client without a certificate: server error %v", serr)
	}
	stranger := good.Config.Clone()
	stranger.Certificates = other.Config.Certificates
	if _, serr := handshake(t, stranger, server); serr == nil || !strings.Contains(serr.Error(), "certificate signed by unknown authority") {
		t.Errorf("client with another start's certificate: server error %v", serr)
	}

	// A plugin serving another start's certificate: the host refuses it.
	setEnv(t, other)
	wrong, err := ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	if cerr, _ := handshake(t, good.Config, wrong); cerr == nil || !strings.Contains(cerr.Error(), "certificate signed by unknown authority") {
		t.Errorf("plugin with another start's certificate: client error %v", cerr)
	}
}

func TestServerTLSEnvironment(t *testing.T) {
	for _, k := range []string{EnvTLSCert, EnvTLSKey, EnvTLSClientCert, envAutoMTLS} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	if c, err := ServerTLS(); c != nil || !errors.Is(err, ErrNoCredentials) {
		t.Errorf("no credentials: %v, %v; want ErrNoCredentials", c, err)
	}
	// An older host offers only go-plugin's automatic mutual TLS: leave it to go-plugin.
	good, err := NewCredentials()
	if err != nil {
		t.Fatal(err)
	}
	var hostPEM string
	for _, kv := range good.Env {
		if k, v, _ := strings.Cut(kv, "="); k == envAutoMTLS {
			hostPEM = v
		}
	}
	t.Setenv(envAutoMTLS, hostPEM)
	if c, err := ServerTLS(); c != nil || err != nil {
		t.Errorf("automatic mutual TLS only: %v, %v; want nil, nil", c, err)
	}
	if os.Getenv(envAutoMTLS) != hostPEM {
		t.Error("ServerTLS removed go-plugin's variable before go-plugin read it")
	}
	// Credentials that do not parse are an error, not a fall-back.
	t.Setenv(EnvTLSCert, "not PEM")
	t.Setenv(EnvTLSKey, "not PEM")
	t.Setenv(EnvTLSClientCert, hostPEM)
	if _, err := ServerTLS(); err == nil || !strings.Contains(err.Error(), EnvTLSCert) {
		t.Errorf("broken credentials: err = %v", err)
	}
}
