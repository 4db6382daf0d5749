// Package report turns a checked run into files people and CI read: report.html (one
// self-contained page: verdict and seed, throughput and latency over time with the fault
// intervals shaded, leader and ISR of each partition over time, the anomaly table with its
// evidence, the configuration and its deviations from Kafka's defaults), junit.xml (one test case
// per anomaly family and one for the verdict), and comparison tables over the cells of a matrix
// (markdown and HTML). It never judges anything itself: anomalies, verdicts and statistics come
// from results.json (verify/results); the history is read only for what varies over time.
//
// # What is read from the history
//
// The history is streamed once (history.Open, Next) into per-second buckets, so that memory
// depends on the run's length, not on its number of ops: a bucket holds counts and a fixed-size
// latency histogram. Runs longer than MaxBuckets seconds get wider buckets.
//
//   - Throughput: completions of writes (f send, txn, rpw) by outcome (ok, fail, info) and ok
//     polls, per bucket of their completion time.
//   - Latency: time from a write's invoke to its ok completion (paired by "of" for async ops,
//     else the process's last invoke), kept per bucket in a log histogram with bins 8 % wide;
//     the plotted p50/p99 are bin midpoints, so within 4 %.
//   - Fault intervals: nemesis events (p "nemesis") paired by history/faultspan, whose package
//     comment has the rules: an interval from a fault's injection to the completion of what
//     healed it (heal, start, resume, heal-all, or the fault itself for a disk loss), dropped
//     when the injection failed, and ending at the end of the history when nothing healed it.
//     The heal-all and healthy events are shown as markers. At most MaxFaults are kept.
//   - Leader and ISR: from sampler events (below).
//
// # ISR sampler events
//
// The leader and ISR plots read events of this shape (any type but fail; the nemesis records
// an invoke with no value, then ok with it):
//
//	{"p":"nemesis","type":"ok","f":"isr","value":{"topic":"t","partition":0,"leader":2,"isr":[1,2,3],"min_isr":2}}
//
// "leader" is -1 when the partition has none; "min_isr" is optional. This is verify/doc.go's ISR
// observation plus "leader" (verify ignores fields it does not know, so one event serves both),
// and what nemesis.WatchISR writes. Consecutive identical observations are kept once.
package report
