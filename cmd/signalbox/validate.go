package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/signalbox/signalbox/config"
)

func newValidateCmd() *cobra.Command {
	var file string
	var connect bool
	cmd := &cobra.Command{
		Use:   "validate -c job.yaml",
		Short: "Check a job file: print every problem, one per line, or ok",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			job, err := loadJob(file, cmd.OutOrStdout(), exitRuntime)
			if err != nil {
				return err
			}
			if connect {
				if err := checkConnect(cmd.Context(), job, file, cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "job file (YAML)")
	cmd.Flags().BoolVar(&connect, "connect", false, "also check that the schema registry answers")
	cmd.MarkFlagRequired("config")
	return cmd
}

// checkConnect checks what --connect asks: that the job's schema registry
// answers. It prints the problem as loadJob does and answers 1.
func checkConnect(ctx context.Context, job *config.Job, file string, w io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := job.CheckRegistry(ctx); err != nil {
		if !printProblems(w, file, err) {
			fmt.Fprintf(w, "%s: %v\n", file, err)
		}
		return &exitError{code: exitRuntime}
	}
	return nil
}

// loadJob loads and validates the job file. On problems it prints each,
// one per line, to w and returns an exitError with code (validate answers
// "invalid" with 1; for run an invalid job is a configuration error, 2).
func loadJob(file string, w io.Writer, code int) (*config.Job, error) {
	job, err := config.LoadChecked(file)
	switch {
	case printProblems(w, file, err):
		return nil, &exitError{code: code}
	case err != nil:
		return nil, usageError(err)
	}
	return job, nil
}

// printProblems prints each problem of err, when it is a config.Errors, one
// per line to w, and reports whether it was.
func printProblems(w io.Writer, file string, err error) bool {
	var es config.Errors
	if !errors.As(err, &es) {
		return false
	}
	for _, e := range es {
		fmt.Fprintf(w, "%s: %s\n", file, e)
	}
	return true
}
