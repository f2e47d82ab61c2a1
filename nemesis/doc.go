// Package nemesis runs real chronos processes through rounds of faults
// and judges what their clients saw (docs/nemesis.md).
//
// Each node runs in a Linux network namespace of its own, and the
// clients and the callback sink in one more; the namespaces reach each
// other only through a user-space switch (Switch) between TAP devices,
// which applies each link's Rule: drop, hold until the heal, delay with
// jitter, loss, duplication, reordering. Process faults are signals:
// SIGKILL with a restart on the same files, SIGSTOP and SIGCONT. A seed
// fixes the schedule (Schedule), the workload and the switch's draws.
//
// Run's duties, in order:
//
//  1. check that namespaces can be made (Supported), and remove the
//     namespaces and processes a dead earlier run left;
//  2. make the namespaces and the switch, write the nodes' files with a
//     cluster key, start the nodes and the sink, wait for every /ping;
//  3. run the workload through the Go client for the lead-in, each
//     round (fault, heal, settle) and the tail, recording every
//     operation, attempt, delivery and fault (Record);
//  4. judge the history with checker's real-run mode (JudgeReal) and
//     write the report: the per-round table, the violations and each
//     violated timer's story with the node log lines that name it;
//  5. tear everything down, on an error or a cancelled context too.
//
// The rule engine, the switch, the schedule, the sink and the judging
// are tested in plain Go; the namespaces when the tests run as root.
package nemesis
