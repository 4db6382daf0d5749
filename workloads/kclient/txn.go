package kclient

// Transaction outcomes. A transaction is committed only by an EndTxn(commit) that the
// coordinator accepts, so:
//
//   - ok: the commit returned without error.
//   - fail: the commit was never requested (the intent was abort; a record of the transaction
//     failed, leaving the client in an error state in which a commit sends nothing; the instance
//     crashed before committing), or the commit failed and then the coordinator accepted
//     EndTxn(abort) for the same transaction — which it refuses once a commit has been prepared.
//   - info: the commit returned an error (timeout, fenced, coordinator moved, offsets not
//     added) and no abort was confirmed after it: the EndTxn(commit) may have been prepared
//     before the error, and a prepared commit completes even if the instance is fenced.
//
// The error texts of the fail outcomes begin with these, so that a history says which it was.
const (
	TxnAborted        = "aborted"
	TxnNotSent        = "commit not requested: "
	TxnAbortConfirmed = "commit failed, then the coordinator accepted the abort: "
)
