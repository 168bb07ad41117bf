package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/signalbox/signalbox/config"
)

func newValidateCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "validate -c job.yaml",
		Short: "Check a job file: print every problem, one per line, or ok",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := loadJob(file, cmd.OutOrStdout(), exitRuntime); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "job file (YAML)")
	cmd.MarkFlagRequired("config")
	return cmd
}

// loadJob loads and validates the job file. On problems it prints each,
// one per line, to w and returns an exitError with code (validate answers
// "invalid" with 1; for run an invalid job is a configuration error, 2).
func loadJob(file string, w io.Writer, code int) (*config.Job, error) {
	job, err := config.LoadChecked(file)
	var es config.Errors
	switch {
	case errors.As(err, &es):
		for _, e := range es {
			fmt.Fprintf(w, "%s: %s\n", file, e)
		}
		return nil, &exitError{code: code}
	case err != nil:
		return nil, usageError(err)
	}
	return job, nil
}
