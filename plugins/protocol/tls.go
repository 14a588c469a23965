package protocol

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"time"
)

// The environment variables through which the host hands a plugin its credentials for one
// start: the plugin's certificate and private key, and the host's certificate, the only
// client the plugin may accept. All three are PEM.
//
// Threat model. The connection between the host and a plugin is mutual TLS so that no
// other local process can call the plugin (and make it read or write files), and none can
// pose as the plugin to the host. The host makes fresh Ed25519 keys at every start; its
// own private key never leaves the host. The plugin's private key travels in the plugin's
// environment: on Linux /proc/PID/environ is readable only by the same user (and root),
// who could equally read the host's memory or replace its configuration, so that user is
// inside the trust boundary. With Yama's ptrace_scope ≥ 1 the same user can still read the
// environment but no longer the memory, so the plugin's key (never the host's) is the one
// thing such a process could learn; it lets it answer as the plugin only on a connection
// the host makes to an address the plugin announced on its private stdout pipe. Serve
// removes the variables from its own environment once read, so processes the plugin
// starts do not inherit them.
const (
	EnvTLSCert       = "AMID_PLUGIN_TLS_CERT"
	EnvTLSKey        = "AMID_PLUGIN_TLS_KEY"
	EnvTLSClientCert = "AMID_PLUGIN_TLS_CLIENT_CERT"
)

// envAutoMTLS is go-plugin's variable for its automatic mutual TLS: a plugin built with an
// SDK that predates the host's credentials answers it with a certificate of its own.
const envAutoMTLS = "PLUGIN_CLIENT_CERT"

// tlsName is the DNS name in both certificates. It is go-plugin's, so that the certificate
// of a plugin that falls back to automatic mutual TLS verifies as well.
const tlsName = "localhost"

// ErrNoCredentials means a plugin was started without TLS credentials.
var ErrNoCredentials = errors.New("no TLS credentials in the environment; plugins are started by AMID")

// Credentials are the TLS credentials of one plugin start.
type Credentials struct {
	// Env holds the variables to add to the plugin's environment.
	Env []string
	// Config is the host's side: its client certificate, and the plugin's certificate as
	// the only root it trusts. Pass it as go-plugin's ClientConfig.TLSConfig.
	Config *tls.Config
	// Pool is Config.RootCAs as made. go-plugin replaces Config.RootCAs with the
	// certificate a plugin announces when it falls back to automatic mutual TLS; Legacy
	// tells.
	Pool *x509.CertPool
}

// Legacy reports whether the plugin fell back to go-plugin's automatic mutual TLS (an SDK
// that does not read the host's credentials): go-plugin then trusts the certificate the
// plugin announced on its stdout instead of the one the host made. Call it after the
// handshake.
func (c *Credentials) Legacy() bool { return c.Config.RootCAs != c.Pool }

// NewCredentials makes fresh credentials for one plugin start: a self-signed Ed25519
// certificate for the host (client authentication) and one for the plugin (server
// authentication), each trusting only the other.
func NewCredentials() (*Credentials, error) {
	hostCert, hostDER, _, err := selfSigned(x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	plugCert, plugDER, plugKey, err := selfSigned(x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(plugKey)
	if err != nil {
		return nil, fmt.Errorf("plugin credentials: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(plugCert.Leaf)
	hostPEM := pemString("CERTIFICATE", hostDER)
	return &Credentials{
		Env: []string{
			EnvTLSCert + "=" + pemString("CERTIFICATE", plugDER),
			EnvTLSKey + "=" + pemString("PRIVATE KEY", keyDER),
			EnvTLSClientCert + "=" + hostPEM,
			// A plugin whose SDK only knows go-plugin's automatic mutual TLS makes its own
			// certificate and accepts this one as its client.
			envAutoMTLS + "=" + hostPEM,
		},
		Config: &tls.Config{
			Certificates: []tls.Certificate{hostCert},
			RootCAs:      pool,
			ServerName:   tlsName,
			MinVersion:   tls.VersionTLS13,
		},
		Pool: pool,
	}, nil
}

// ServerTLS is the plugin's side: its certificate, accepting only clients that present the
// host's certificate. It reads the credentials from the environment and removes them
// (processes the plugin starts do not inherit them). It returns nil and no error when the
// host offers only go-plugin's automatic mutual TLS, and ErrNoCredentials when it offers
// no TLS at all: a plugin never serves in plain text.
func ServerTLS() (*tls.Config, error) {
	certPEM, keyPEM, clientPEM := os.Getenv(EnvTLSCert), os.Getenv(EnvTLSKey), os.Getenv(EnvTLSClientCert)
	if certPEM == "" && keyPEM == "" && clientPEM == "" {
		if os.Getenv(envAutoMTLS) != "" {
			return nil, nil // an older host: go-plugin's automatic mutual TLS
		}
		return nil, ErrNoCredentials
	}
	for _, k := range []string{EnvTLSCert, EnvTLSKey, EnvTLSClientCert, envAutoMTLS} {
		os.Unsetenv(k)
	}
	return serverConfig(certPEM, keyPEM, clientPEM)
}

// serverConfig builds the plugin's tls.Config from its PEM credentials.
func serverConfig(certPEM, keyPEM, clientPEM string) (*tls.Config, error) {
	cert, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		return nil, fmt.Errorf("plugin TLS credentials (%s, %s): %w", EnvTLSCert, EnvTLSKey, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(clientPEM)) {
		return nil, fmt.Errorf("plugin TLS credentials: %s holds no PEM certificate", EnvTLSClientCert)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// selfSigned makes an Ed25519 key and a self-signed certificate for tlsName with one
// extended key usage. Each verifies as its own root: it is not a CA and signs nothing else.
func selfSigned(use x509.ExtKeyUsage) (tls.Certificate, []byte, ed25519.PrivateKey, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("plugin credentials: %w", err)
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("plugin credentials: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: tlsName, Organization: []string{"AMID plugin"}},
		DNSNames:              []string{tlsName},
		NotBefore:             now.Add(-time.Hour), // clock steps between host and plugin
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{use},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("plugin credentials: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("plugin credentials: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, der, key, nil
}

func pemString(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}
