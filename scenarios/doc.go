// Package scenarios holds Verity's scenarios as data: what cluster to start, which topics and
// client settings to use, which workloads to run, which faults to inject when, for how long
// and from which seed, and what the run is expected to show and why. The YAML format is
// described in docs/scenarios.md.
//
// A scenario comes from three places, all giving the same type:
//
//   - Builtins: the built-in catalogue, "default" first, built in Go;
//   - Load/Parse: a YAML file of the same shape (field names as in the yaml tags), decoded
//     strictly: an unknown field, a value of the wrong type or an invalid setting is an error
//     that names the field's path, its line and what it accepts;
//   - Override: a scenario with command-line settings (Knobs) forced onto it.
//
// Resolve applies the defaults and validates once, giving a Resolved scenario: what the runner
// takes. Kafka settings a scenario leaves unset are not defaulted here: package kafkaconf
// resolves them, once, for every reader.
//
// Three vocabularies are closed lists kept as data, each in one place: the faults (FaultSpecs:
// what each does, the targets and params it takes, how it becomes the nemesis's fault, and how
// the matrix aims it), the target roles (RoleSpecs) and the knobs (Knobs: the flags of verity
// run, check and matrix, and the matrix's axes).
package scenarios
