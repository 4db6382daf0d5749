// Package kafkaconf holds Kafka's settings as Verity uses them, each defined once: typed values
// with one parser each (Acks, Isolation, Compression, Duration), Kafka 4.3's documented defaults
// of the producer, topic and broker settings that decide a delivery guarantee, and the functions
// that resolve a producer's and a topic's effective settings from what was asked
// (ResolveProducer, ResolveTopic).
//
// What Kafka promises and what a client can do are kept apart: ResolveProducer applies Kafka's
// rules (defaults, enable.idempotence's default and conflicts), then the limits of the client
// that will run the producer, given as a Client value (Kafka's Java client by JavaClient; other
// clients declare theirs where they are implemented). Every place that needs a producer's
// settings — scenario validation, the workloads that configure the client, the history header,
// the guarantee table — goes through it, so that no setting is parsed or defaulted twice.
//
// It imports nothing of Verity's.
package kafkaconf
