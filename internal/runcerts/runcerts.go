// Package runcerts makes and loads the credentials of one run's agent
// control API: a throw-away certificate authority, one server certificate
// that every agent presents (valid for the addresses and names the run
// uses) and one client certificate for the orchestrator. Both sides verify
// each other against the run's CA (mutual TLS), so an agent listening on a
// network answers only the orchestrator of its run.
//
// The CA's private key is never written: nobody can mint more credentials
// for a run once `homatb certs` has ended, and a new run makes a new CA.
package runcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names in a credentials directory.
const (
	CAFile        = "ca.pem"
	AgentCertFile = "agent.pem"
	AgentKeyFile  = "agent-key.pem"
	ClientCert    = "client.pem"
	ClientKey     = "client-key.pem"
)

// DefaultValidity is how long a run's certificates are valid: a week
// covers a long sweep, and a leaked key is useless soon after.
const DefaultValidity = 7 * 24 * time.Hour

// clientName is the client certificate's common name.
const clientName = "homatb-orchestrator"

// Options say what Generate makes.
type Options struct {
	// Hosts are the agents' control addresses (IPs) and DNS names the
	// server certificate is valid for; loopback and localhost are always
	// added.
	Hosts []string
	// Validity defaults to DefaultValidity.
	Validity time.Duration
	// Now is the start of validity (default: the present, less a minute
	// for clocks slightly behind).
	Now time.Time
}

// Generate writes a new CA certificate, the agents' server certificate and
// key and the orchestrator's client certificate and key into dir. Keys are
// ECDSA P-256 and files holding keys are readable by their owner only.
func Generate(dir string, o Options) error {
	if o.Validity <= 0 {
		o.Validity = DefaultValidity
	}
	if o.Now.IsZero() {
		o.Now = time.Now().Add(-time.Minute)
	}
	ips, names, err := splitHosts(o.Hosts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certs: CA key: %w", err)
	}
	caTmpl := template(pkix.Name{CommonName: "homatb run CA"}, o)
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.MaxPathLenZero = true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("certs: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fmt.Errorf("certs: CA: %w", err)
	}
	if err := writePEM(filepath.Join(dir, CAFile), "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	srv := template(pkix.Name{CommonName: "homatb agent"}, o)
	srv.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	srv.IPAddresses, srv.DNSNames = ips, names
	if err := issue(dir, AgentCertFile, AgentKeyFile, srv, ca, caKey); err != nil {
		return err
	}
	cli := template(pkix.Name{CommonName: clientName}, o)
	cli.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return issue(dir, ClientCert, ClientKey, cli, ca, caKey)
}

// splitHosts sorts hosts into IPs and DNS names, with loopback added.
func splitHosts(hosts []string) ([]net.IP, []string, error) {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	names := []string{"localhost"}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host // an address with its port: the port does not matter
		}
		switch {
		case h == "":
			continue
		case net.ParseIP(h) != nil:
			ips = append(ips, net.ParseIP(h))
		case validName(h):
			names = append(names, h)
		default:
			return nil, nil, fmt.Errorf("certs: host %q is neither an IP address nor a DNS name", h)
		}
	}
	return ips, names, nil
}

func validName(h string) bool {
	for _, r := range h {
		if !(r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return !strings.HasPrefix(h, "-") && !strings.HasPrefix(h, ".")
}

func template(subject pkix.Name, o Options) *x509.Certificate {
	// 128 random bits: serial numbers must be unique per CA, and positive.
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		serial = big.NewInt(o.Now.UnixNano())
	}
	subject.Organization = []string{"homatb"}
	return &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: o.Now, NotAfter: o.Now.Add(o.Validity),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
}

// issue makes a key pair for tmpl, signs it with the CA and writes both.
func issue(dir, certFile, keyFile string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certs: %s key: %w", certFile, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("certs: %s: %w", certFile, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("certs: %s key: %w", certFile, err)
	}
	if err := writePEM(filepath.Join(dir, keyFile), "PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, certFile), "CERTIFICATE", der, 0o644)
}

func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}

// Files name one side's credentials: its certificate and key and the CA
// that signs the other side's.
type Files struct {
	Cert, Key, CA string
}

// AgentFiles and ClientFiles are the two sides' files in a directory
// Generate wrote.
func AgentFiles(dir string) Files {
	return Files{Cert: filepath.Join(dir, AgentCertFile), Key: filepath.Join(dir, AgentKeyFile), CA: filepath.Join(dir, CAFile)}
}

// ClientFiles are the orchestrator's files in a directory Generate wrote.
func ClientFiles(dir string) Files {
	return Files{Cert: filepath.Join(dir, ClientCert), Key: filepath.Join(dir, ClientKey), CA: filepath.Join(dir, CAFile)}
}

// load reads the key pair and the CA pool.
func (f Files) load() (tls.Certificate, *x509.CertPool, error) {
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return tls.Certificate{}, nil, errors.New("certs: need a certificate, its key and the run's CA")
	}
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("certs: %s / %s: %w", f.Cert, f.Key, err)
	}
	pemCA, err := os.ReadFile(f.CA)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("certs: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		return tls.Certificate{}, nil, fmt.Errorf("certs: %s holds no PEM certificate", f.CA)
	}
	return pair, pool, nil
}

// ServerConfig is an agent's TLS configuration: it presents its
// certificate and accepts only clients whose certificate the run's CA
// signed for client authentication.
func ServerConfig(f Files) (*tls.Config, error) {
	pair, pool, err := f.load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13,
	}, nil
}

// ClientConfig is the orchestrator's TLS configuration: it presents the
// client certificate and trusts only agents the run's CA signed.
func ClientConfig(f Files) (*tls.Config, error) {
	pair, pool, err := f.load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS13}, nil
}

// IsLoopback reports whether a listen address ("host:port") can only be
// reached from this machine (network namespace): a loopback IP or
// "localhost". An empty host (all interfaces) is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
