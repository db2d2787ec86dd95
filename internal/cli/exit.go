package cli

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"

	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/pool"
)

// The exit codes of pristine (and pristine-bench), in one table: ExitCode
// maps every error to one of them, `--help` and docs/cli.md list them.
const (
	ExitOK          = 0   // done
	ExitFailed      = 1   // anything not below: the message says what and how to fix it
	ExitBadInput    = 2   // bad input: an unknown command or flag, a flag's value refused, a missing argument
	ExitNoDaemon    = 3   // no daemon answers on the root's socket (and the command does not start one)
	ExitNoFreeDB    = 4   // no free database in time: every slot stayed leased for the lease's --wait
	ExitDoesNotFit  = 5   // does not fit: the pool or template needs more memory or disk than there is
	ExitInterrupted = 130 // Ctrl-C or SIGTERM: the command stopped what it started and exited
)

// ExitCodesHelp is the table as `pristine --help` (and pristine-bench's) prints it.
const ExitCodesHelp = `
Exit codes:
  0    done
  1    failed (the message names the cause and the fix)
  2    bad input: unknown command or flag, a value refused, a missing argument
  3    no daemon answers on the root's socket
  4    no free database in time (every slot stayed leased for --wait)
  5    does not fit: not enough memory or disk for the pool or template
  130  interrupted (Ctrl-C, SIGTERM)
  pristine sql exits with the mariadb client's own status.
`

// ErrUsage marks bad input: an error wrapping it exits with ExitBadInput.
var ErrUsage = errors.New("usage")

// ExitCode maps err to its exit code; nil is ExitOK.
func ExitCode(err error) int {
	var exitErr *exec.ExitError
	var apiErr *client.APIError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &exitErr):
		return exitErr.ExitCode() // a command pristine ran (pristine sql)
	case errors.Is(err, ErrUsage), isFlagError(err):
		return ExitBadInput
	case errors.Is(err, client.ErrNoDaemon):
		return ExitNoDaemon
	case errors.Is(err, pool.ErrLeaseTimeout):
		return ExitNoFreeDB
	case errors.Is(err, pool.ErrNoRoom):
		return ExitDoesNotFit
	case errors.As(err, &apiErr):
		switch {
		case apiErr.Status == http.StatusBadRequest:
			return ExitBadInput
		case apiErr.Status == http.StatusInsufficientStorage:
			return ExitDoesNotFit
		case apiErr.Status == http.StatusServiceUnavailable && strings.Contains(apiErr.Message, pool.ErrLeaseTimeout.Error()):
			return ExitNoFreeDB
		}
	}
	return ExitFailed
}

// isFlagError reports whether err is cobra's word for bad input: an
// unknown command or flag, a flag's value it could not parse, or the
// wrong number of arguments.
func isFlagError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command ", "unknown flag: ", "unknown shorthand flag: ", "invalid argument ",
		"flag needs an argument", "required flag(s) ", "accepts ", "requires at least ", "requires at most ", "accepts between "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
