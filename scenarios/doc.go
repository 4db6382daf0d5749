// Package scenarios holds Verity's scenarios as plain data: what cluster to start, which topics
// and client settings to use, which workloads to run, which faults to inject when, for how long
// and from which seed, and what the run is expected to show and why. It holds no run logic: the
// harness, workloads and nemesis packages read a Scenario and do the work.
//
// A scenario comes from three places, all giving the same type:
//
//   - Builtins: the catalogue of shared/design/scenarios.md plus "default", built in Go;
//   - Load/Parse: a YAML file of the same shape (field names as in the yaml tags), decoded
//     strictly: an unknown field, a value of the wrong type or an invalid setting is an error
//     that names the field's path and what it accepts;
//   - Override: a scenario with the CLI's flags (--acks, --min-isr, ...) forced onto it.
//
// Config renders the part of a scenario that the checker judges by, in the field names of
// verify/guarantee.Config, as the history header's "config".
//
// Faults and targets are names from closed lists (FaultSpecs, RoleSpecs), kept as data so that
// the nemesis can map each name onto its fault values.
package scenarios
