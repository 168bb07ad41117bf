package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox/internal/logging"
	"github.com/signalbox/signalbox/internal/version"
)

// The exit codes.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

// exitError carries an exit code. A nil err prints nothing more.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func usageError(err error) error   { return &exitError{exitUsage, err} }
func runtimeError(err error) error { return &exitError{exitRuntime, err} }

func main() {
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the CLI with args and returns the exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			report(stderr, ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag, wrong arguments.
	report(stderr, err)
	return exitUsage
}

// report prints err with one "signalbox: " prefix: the library's errors
// already start with it.
func report(w io.Writer, err error) {
	fmt.Fprintln(w, "signalbox:", strings.TrimPrefix(err.Error(), "signalbox: "))
}

type loggerKey struct{}

func newRootCmd() *cobra.Command {
	build := version.Get()
	root := &cobra.Command{
		Use:           "signalbox",
		Short:         "Event-time ordering stream processor for Kafka",
		Version:       build.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd)
			if err != nil {
				return usageError(err)
			}
			cmd.SetContext(context.WithValue(cmd.Context(), loggerKey{}, log))
			return nil
		},
	}
	pf := root.PersistentFlags()
	pf.String("log-format", "", "log format: console or json (default: console on a terminal, json otherwise)")
	pf.String("log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(newRunCmd(), newValidateCmd(), newBrokerCmd(), newStatusCmd())
	root.AddCommand(newDemoCmd(), newVersionCmd(build))
	root.SetVersionTemplate(build.String())
	return root
}

func newVersionCmd(build version.Info) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), build.String())
			return err
		},
	}
}

func newLogger(cmd *cobra.Command) (*zap.Logger, error) {
	format, _ := cmd.Flags().GetString("log-format")
	level, _ := cmd.Flags().GetString("log-level")
	w := cmd.ErrOrStderr()
	return logging.New(format, level, w, logging.IsTerminal(w))
}

// logger returns the logger configured by --log-format and --log-level,
// writing to the command's stderr.
func logger(cmd *cobra.Command) *zap.Logger {
	if log, ok := cmd.Context().Value(loggerKey{}).(*zap.Logger); ok {
		return log
	}
	log, err := newLogger(cmd)
	if err != nil {
		log, _ = logging.New("", "", cmd.ErrOrStderr(), false)
		log.Warn("bad log flags; using the defaults", zap.Error(err))
	}
	return log
}
