package supervisor

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"amid/plugins/protocol"
)

// TestTLSRefused starts plugins that do not use the credentials the host gave them: each is
// refused at start, and its process does not outlive the refusal.
func TestTLSRefused(t *testing.T) {
	const refused = "plugin faulty failed the mutual TLS handshake"
	for _, c := range []struct {
		fault string
		want  []string // in the error
	}{
		// Serves without TLS: the host's TLS client finds no handshake.
		{"plaintext", []string{refused, "first record does not look like a TLS handshake"}},
		// Serves a certificate the host did not make.
		{"wrong-tls", []string{refused, "certificate signed by unknown authority"}},
		// Started without credentials: the SDK refuses to serve and exits with status 1.
		{"no-tls", []string{"plugin faulty exited during start (exit status 1) before its handshake"}},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Setenv("AMID_FAULT", c.fault)
			e := newEnv(t)
			en := e.trusted(faultyBin, "faulty")
			p, err := Start(context.Background(), en, e.opts)
			if err == nil {
				p.Kill()
				t.Fatal("started")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want %q in it", err, w)
				}
			}
			if c.fault == "no-tls" && !strings.Contains(e.log.String(), protocol.ErrNoCredentials.Error()) {
				t.Errorf("the host log lacks the plugin's reason %q", protocol.ErrNoCredentials)
			}
		})
	}
}

// TestTLSLegacy starts a plugin that serves the way an SDK before the host's credentials
// did (go-plugin's automatic mutual TLS): it still works, and the host log says why it is
// slow.
func TestTLSLegacy(t *testing.T) {
	t.Setenv("AMID_FAULT", "legacy-tls")
	e := newEnv(t)
	en := e.trusted(faultyBin, "faulty")
	p, err := Start(context.Background(), en, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if _, err := p.Describe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.log.String(), "plugin uses go-plugin's automatic mutual TLS") {
		t.Errorf("the host log does not name the legacy TLS:\n%s", e.log.String())
	}
}

// TestTLSOtherClientRefused connects to a running plugin's address the way another local
// process could: without the host's certificate, or with a certificate of its own, the
// plugin refuses the connection.
func TestTLSOtherClientRefused(t *testing.T) {
	e := newEnv(t)
	en := e.trusted(echoBin, "echo")
	p, err := Start(context.Background(), en, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	addr := p.client.ReattachConfig().Addr
	own, err := protocol.NewCredentials()
	if err != nil {
		t.Fatal(err)
	}
	for name, certs := range map[string][]tls.Certificate{
		"no certificate":      nil,
		"its own certificate": own.Config.Certificates,
	} {
		// The intruder does not care who the server is; the server must care who it is.
		c, err := tls.Dial(addr.Network(), addr.String(), &tls.Config{InsecureSkipVerify: true, Certificates: certs, MinVersion: tls.VersionTLS13})
		if err != nil {
			t.Fatalf("%s: dial: %v", name, err)
		}
		// In TLS 1.3 the client's handshake ends before the server has checked its
		// certificate: the refusal arrives as an alert on the first read.
		_, err = c.Read(make([]byte, 1))
		c.Close()
		if err == nil || !strings.Contains(err.Error(), "tls: ") {
			t.Errorf("%s: read: %v, want the plugin's TLS alert", name, err)
		}
	}
	// The plugin still serves the host.
	if _, err := p.Describe(context.Background()); err != nil {
		t.Errorf("Describe after the intruders: %v", err)
	}
}
