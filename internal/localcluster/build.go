package localcluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// chronosPackage is the command every process of the harness runs.
const chronosPackage = "github.com/chronos-timer/chronos/cmd/chronos"

// Build builds cmd/chronos into dir with the go tool on PATH, until ctx
// ends, and returns the binary's path. A missing go tool is an error
// wrapping exec.ErrNotFound.
func Build(ctx context.Context, dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("localcluster: build cmd/chronos: %w", err)
	}
	bin := filepath.Join(dir, "chronos")
	if out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, chronosPackage).CombinedOutput(); err != nil {
		return "", fmt.Errorf("localcluster: go build %s: %v\n%s", chronosPackage, err, out)
	}
	return bin, nil
}
