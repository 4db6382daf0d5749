// Package kclient is the seam between Verity's workload roles and the Kafka clients they drive:
// the facts and vocabulary every client shares — what a broker's answer to a produce says about
// its append, how a send or a transaction ends (ok, fail, info), how the Java client maps a key to
// a partition. It imports no Kafka library, so that a client written in another package, or in
// another language behind a program, reads the same rules as the Go clients.
package kclient
