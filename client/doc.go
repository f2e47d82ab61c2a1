// Package client is the Go client of a Chronos cluster: it creates,
// updates, deletes and reads timers through any of the cluster's nodes,
// and its Handler receives their pops.
//
// A Client fails over between the nodes it is given and retries what may
// succeed elsewhere or later, and only that:
//
//   - no answer (a refused or broken connection, the attempt's timeout),
//     503, and 408 (a write that reached its node after its deadline and
//     was not applied) are retried on the next node, after a backoff that
//     doubles from Config.BackoffMin to BackoffMax and is never shorter
//     than the node's Retry-After;
//   - every write carries the end of its attempt (X-Chronos-Deadline), so
//     that a node that gets it later, once the client has moved on,
//     refuses it rather than apply it behind the retry's back;
//   - 400 (ErrBadRequest, with the node's reason) and every other answer
//     are final;
//   - when every attempt failed, the error matches ErrAllNodesFailed and
//     wraps the last failure.
//
// Retrying is safe because every request the client sends is idempotent.
// Create chooses the timer's ID itself and writes it with PUT, so that a
// create whose answer was lost and is sent again writes the same timer
// again rather than a second one. A 503 from a write means "it may still
// take effect": the replicas the node needed did not all answer in time.
//
// The application's duties:
//
//  1. Keep the ID that Create or Update returned last: its second half
//     names the timer's replicas, so that an update or delete reaches the
//     replicas of an older cluster layout too.
//  2. Serve a Handler at each callback URI. It drops duplicate pops, which
//     a redundant timer service makes when a replica does not hear of the
//     pop of the one before it in time; every copy carries the same
//     sequence number.
//  3. Answer pops within 2 s: a pop that is not answered 2xx by then is
//     left to the timer's next replica, and arrives again from it.
//
// docs/client.md in the repository is the guide; docs/api.md the HTTP API.
package client
