package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/signalbox/signalbox/internal/progress"
)

func newStatusCmd() *cobra.Command {
	var addr string
	var raw bool
	cmd := &cobra.Command{
		Use:   "status --addr host:port",
		Short: "Show a running job's watermark, who holds it and why, the parked set, each partition and the late counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			body, err := fetchStatus(ctx, addr)
			if err != nil {
				return runtimeError(err)
			}
			if raw {
				_, err := cmd.OutOrStdout().Write(body)
				return err
			}
			var st progress.Status
			if err := json.Unmarshal(body, &st); err != nil {
				return runtimeError(fmt.Errorf("status from %s: %w", addr, err))
			}
			return st.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "the running job's admin server: host:port, or the URL it logs at start")
	cmd.Flags().BoolVar(&raw, "json", false, "print the JSON document as served")
	cmd.MarkFlagRequired("addr")
	return cmd
}

func fetchStatus(ctx context.Context, addr string) ([]byte, error) {
	base := strings.TrimSuffix(addr, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status from %s: %s", addr, resp.Status)
	}
	return body, nil
}
