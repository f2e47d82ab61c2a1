package server

import (
	"log/slog"

	"github.com/chronos-timer/chronos/server/config"
)

// The configuration is package config's: the settings table, the files,
// the flags and their warnings. These are its names as the adapter and
// the commands that run it use them.
type (
	// Config is config.Config.
	Config = config.Config
	// Flags is config.Flags.
	Flags = config.Flags
)

// Names of package config the commands use through this one.
const (
	// LogFileName is config.LogFileName.
	LogFileName = config.LogFileName
	// DefaultShutdownTimeout is config.DefaultShutdownTimeout.
	DefaultShutdownTimeout = config.DefaultShutdownTimeout
)

// DefaultConfig returns config.DefaultConfig().
func DefaultConfig() Config { return config.DefaultConfig() }

// LogWarnings is config.LogWarnings.
func LogWarnings(log *slog.Logger, ws []config.Warning) { config.LogWarnings(log, ws) }
