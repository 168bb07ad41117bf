package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox/embedded"
)

func newBrokerCmd() *cobra.Command {
	var addr, registryAddr, certOut, saslMech, saslUser, saslPasswordEnv string
	var partitions, brokers int
	var topics []string
	cmd := &cobra.Command{
		Use:   "broker [--addr 127.0.0.1:9092] [--registry-addr 127.0.0.1:8081]",
		Short: "Run the embedded Kafka-protocol broker (kfake) and a schema registry (srfake) until signalled, for local development",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if brokers < 1 {
				return usageError(fmt.Errorf("--brokers: must be at least 1, got %d", brokers))
			}
			opts := []embedded.Option{embedded.WithDefaultPartitions(partitions), embedded.WithAutoCreateTopics(), embedded.WithBrokers(brokers)}
			reg, err := registryListen(addr, registryAddr)
			if err != nil {
				return usageError(err)
			}
			if reg != "" {
				opts = append(opts, embedded.WithSchemaRegistry(reg))
			}
			for _, t := range topics {
				name, n, err := parseTopic(t)
				if err != nil {
					return usageError(err)
				}
				opts = append(opts, embedded.WithTopic(name, n))
			}
			user, err := brokerUser(saslMech, cmd.Flags().Changed("sasl-mechanism"), saslUser, saslPasswordEnv)
			if err != nil {
				return usageError(err)
			}
			if user != nil {
				opts = append(opts, embedded.WithUser(user.Mechanism, user.Name, user.Password))
			}
			if certOut != "" {
				cert, err := embedded.SelfSignedTLS()
				if err != nil {
					return runtimeError(err)
				}
				if err := os.WriteFile(certOut, cert.CertPEM, 0o644); err != nil {
					return usageError(fmt.Errorf("--tls-cert-out: %w", err))
				}
				opts = append(opts, embedded.WithTLS(cert.Server, cert.Client))
			}
			log := logger(cmd)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ready := func(c *embedded.Cluster) {
				fmt.Fprintln(cmd.OutOrStdout(), strings.Join(c.Addrs(), ","))
				if u := c.RegistryURL(); u != "" {
					fmt.Fprintln(cmd.OutOrStdout(), u)
				}
				log.Info("broker ready", zap.Strings("addrs", c.Addrs()), zap.String("schema_registry", c.RegistryURL()))
			}
			if err := embedded.Run(ctx, addr, ready, opts...); err != nil {
				return runtimeError(err)
			}
			log.Info("broker stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:9092", "listen address (port 0: any free port)")
	f.IntVar(&partitions, "partitions", 3, "partitions of auto-created topics")
	f.IntVar(&brokers, "brokers", 1, "brokers in the cluster, all in this process; the first listens on --addr, the others on the following ports (any free port with port 0), and their addresses are printed comma-separated")
	f.StringArrayVar(&topics, "topic", nil, "pre-create a topic, name:partitions (repeatable)")
	f.StringVar(&certOut, "tls-cert-out", "", "serve TLS on every broker with a fresh self-signed certificate (a day's, for 127.0.0.1 and localhost), written in PEM to this file for clients to trust: the job file's tls.ca_file, kcat's ssl.ca.location (the schema registry stays plain HTTP)")
	f.StringVar(&saslMech, "sasl-mechanism", embedded.MechanismScramSHA256, "with --sasl-user: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	f.StringVar(&saslUser, "sasl-user", "", "require SASL: the one user's name (with --sasl-password-env)")
	f.StringVar(&saslPasswordEnv, "sasl-password-env", "", "with --sasl-user: the name of the environment variable holding the user's password, as the job file's sasl.password_env")
	f.StringVar(&registryAddr, "registry-addr", "", "listen address of the schema registry, whose URL is printed on the line after the brokers' addresses; empty: --addr's host on port 8081, or any free port when --addr's port is 0; \"off\": no registry")
	return cmd
}

// brokerUser is the user --sasl-user asks for (nil without it), its
// password read from the environment variable --sasl-password-env names;
// mechSet says --sasl-mechanism was given.
func brokerUser(mech string, mechSet bool, name, env string) (*embedded.User, error) {
	switch {
	case name == "" && env == "" && mechSet:
		return nil, errors.New("--sasl-mechanism: needs --sasl-user and --sasl-password-env")
	case name == "" && env == "":
		return nil, nil
	case name == "":
		return nil, errors.New("--sasl-password-env: needs --sasl-user")
	case env == "":
		return nil, errors.New("--sasl-user: needs --sasl-password-env, the name of the variable holding the password")
	}
	switch mech {
	case embedded.MechanismPlain, embedded.MechanismScramSHA256, embedded.MechanismScramSHA512:
	default:
		return nil, fmt.Errorf("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	pw := os.Getenv(env)
	if pw == "" {
		return nil, fmt.Errorf("--sasl-password-env: the environment variable %s is unset or empty", env)
	}
	return &embedded.User{Mechanism: mech, Name: name, Password: pw}, nil
}

// registryListen is where the schema registry listens ("" for none): flag
// when set, else --addr's host on port 8081, or on port 0 (any free port)
// when --addr asks for any free port.
func registryListen(addr, flag string) (string, error) {
	switch flag {
	case "off":
		return "", nil
	case "":
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return "", fmt.Errorf("--addr %q: %w", addr, err)
		}
		if port == "0" {
			return net.JoinHostPort(host, "0"), nil
		}
		return net.JoinHostPort(host, "8081"), nil
	}
	if _, _, err := net.SplitHostPort(flag); err != nil {
		return "", fmt.Errorf("--registry-addr %q: want host:port or off: %w", flag, err)
	}
	return flag, nil
}

// parseTopic parses "name:partitions" (or "name" for the default count).
func parseTopic(s string) (string, int32, error) {
	name, n, found := strings.Cut(s, ":")
	if name == "" {
		return "", 0, fmt.Errorf("--topic %q: want name:partitions", s)
	}
	if !found {
		return name, 0, nil
	}
	p, err := strconv.ParseInt(n, 10, 32)
	if err != nil || p <= 0 {
		return "", 0, fmt.Errorf("--topic %q: partitions must be a positive number", s)
	}
	return name, int32(p), nil
}
