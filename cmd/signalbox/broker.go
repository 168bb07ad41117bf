package main

import (
	"fmt"
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
	var addr string
	var partitions, brokers int
	var topics []string
	cmd := &cobra.Command{
		Use:   "broker [--addr 127.0.0.1:9092]",
		Short: "Run the embedded Kafka-protocol broker (kfake) until signalled, for local development",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if brokers < 1 {
				return usageError(fmt.Errorf("--brokers: must be at least 1, got %d", brokers))
			}
			opts := []embedded.Option{embedded.WithDefaultPartitions(partitions), embedded.WithAutoCreateTopics(), embedded.WithBrokers(brokers)}
			for _, t := range topics {
				name, n, err := parseTopic(t)
				if err != nil {
					return usageError(err)
				}
				opts = append(opts, embedded.WithTopic(name, n))
			}
			log := logger(cmd)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ready := func(c *embedded.Cluster) {
				fmt.Fprintln(cmd.OutOrStdout(), strings.Join(c.Addrs(), ","))
				log.Info("broker ready", zap.Strings("addrs", c.Addrs()))
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
	return cmd
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
