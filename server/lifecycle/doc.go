// Package lifecycle is the life of the chronos process around its node:
// the log it writes (OpenLog, into the [logging] folder and to stderr),
// its pid file and the lock that keeps a second process from it
// (CreatePIDFile), --daemon (Daemonize in the parent; DaemonChild and
// DaemonStarted in the child, which reports through an inherited pipe
// once it serves) and the signals it answers (StopSignals,
// ControlSignals, DNSSignal).
//
// It knows nothing of the node: package server runs the node and acts on
// the signals; cmd/chronos calls Daemonize and OpenLog before server.Run.
package lifecycle
