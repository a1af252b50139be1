//go:build postgres

/*
Copyright 2026 The paymentjob-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package pgledger_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// authority is a certificate authority made for a test.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newAuthority(t *testing.T, name string) authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serve issues a server certificate for the names and addresses given.
func (a authority) serve(t *testing.T, dnsNames []string, ips ...net.IP) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "ledger database"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: dnsNames, IPAddresses: ips,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// writeFile writes data to a file of the test's folder and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// RootCAFile: the ledger talks to its database over TLS with
// sslmode=verify-full, whatever the DSN says; a server whose certificate
// another authority signed, or signed for another host, is refused.
func TestRootCAFileVerifiesTheServer(t *testing.T) {
	srv := pgserver.Start(t)
	ca := newAuthority(t, "ledger CA")
	certPEM, keyPEM := ca.serve(t, []string{"localhost"}, net.ParseIP("127.0.0.1"))
	srv.EnableTLS(t, certPEM, keyPEM)
	caFile := writeFile(t, "ca.crt", ca.pem)
	srv.CreateDatabase(t, "ledger")
	admin := newPool(t, srv.DSN("ledger"), nil)

	for _, tc := range []struct{ name, dsn string }{
		{"a URL without sslmode", "postgres://postgres@" + srv.Addr() + "/ledger"},
		{"a URL that says sslmode=disable", "postgres://postgres@" + srv.Addr() + "/ledger?sslmode=disable"},
		{"keyword/value", "host=127.0.0.1 port=" + portOf(t, srv.Addr()) + " user=postgres dbname=ledger sslmode=prefer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			l, err := pgledger.Open(t.Context(), tc.dsn, pgledger.Options{RootCAFile: caFile, Cluster: t.Name()})
			g.Expect(err).NotTo(HaveOccurred())
			defer l.Close()
			e := entry("tls/"+tc.name, paymentsv1alpha1.LedgerCompleted)
			g.Expect(l.Record(t.Context(), e)).To(Succeed())
			got, found, err := l.Find(t.Context(), e.Key)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeTrue())
			g.Expect(got.Charge).To(Equal(e.Charge))
			// Every session the ledger holds is encrypted.
			g.Expect(count(t, admin, `SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
				WHERE a.application_name = 'paymentjob-operator' AND NOT s.ssl`)).To(BeZero())
			g.Expect(count(t, admin, `SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
				WHERE a.application_name = 'paymentjob-operator' AND s.ssl`)).To(BeNumerically(">", 0))
		})
	}

	t.Run("another authority's certificate is refused", func(t *testing.T) {
		g := NewWithT(t)
		other := writeFile(t, "other.crt", newAuthority(t, "someone else").pem)
		_, err := pgledger.Open(t.Context(), "postgres://postgres@"+srv.Addr()+"/ledger", pgledger.Options{RootCAFile: other})
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("certificate"))
	})
}

// verify-full checks the host name too: a certificate the right authority
// signed for another host is refused.
func TestRootCAFileChecksTheHostName(t *testing.T) {
	g := NewWithT(t)
	srv := pgserver.Start(t)
	ca := newAuthority(t, "ledger CA")
	certPEM, keyPEM := ca.serve(t, []string{"db.elsewhere.example"})
	srv.EnableTLS(t, certPEM, keyPEM)
	srv.CreateDatabase(t, "ledger")
	_, err := pgledger.Open(t.Context(), "postgres://postgres@"+srv.Addr()+"/ledger",
		pgledger.Options{RootCAFile: writeFile(t, "ca.crt", ca.pem)})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("cannot validate certificate for 127.0.0.1"))
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}
