package harness

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TrustCA is the franz-go option that dials brokers over TLS, trusting
// only the certificates of the PEM file ca (`signalbox broker
// --tls-cert-out`, a job file's tls.ca_file).
func TrustCA(ca string) (kgo.Opt, error) {
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no certificate", ca)
	}
	return kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}), nil
}
