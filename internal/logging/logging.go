package logging

import (
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"
)

// The formats.
const (
	Console = "console"
	JSON    = "json"
)

// New returns a logger writing to w in format ("" → console when tty, else
// JSON) at level (debug, info, warn, error; "" → info).
func New(format, level string, w io.Writer, tty bool) (*zap.Logger, error) {
	if format == "" {
		format = JSON
		if tty {
			format = Console
		}
	}
	lvl := zapcore.InfoLevel
	if level != "" {
		if err := lvl.Set(level); err != nil {
			return nil, fmt.Errorf("log level %q is not one of debug, info, warn, error", level)
		}
	}
	var enc zapcore.Encoder
	switch format {
	case Console:
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		if tty {
			ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
		enc = zapcore.NewConsoleEncoder(ec)
	case JSON:
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	default:
		return nil, fmt.Errorf("log format %q is not one of console, json", format)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), lvl)
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(w)))), nil
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
