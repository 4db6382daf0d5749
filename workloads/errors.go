package workloads

import (
	"errors"

	"github.com/verity-kafka/verity/workloads/kclient"
	kfranz "github.com/verity-kafka/verity/workloads/kclient/franz"
	ksarama "github.com/verity-kafka/verity/workloads/kclient/sarama"
)

// Outcome is a classified send result.
type Outcome = kclient.Outcome

// ErrorText is the history's "error" text for err: the client's message, with Kafka's protocol
// name of a broker error put first (e.g. "kafka server: NOT_ENOUGH_REPLICAS: Messages are
// rejected since …"), so that the history says which error it was in the words the Kafka
// documents use, whichever client met it.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	if ke, ok := errors.AsType[*kclient.Error](err); ok {
		return ke.Text
	}
	if text, ok := kfranz.ErrorText(err); ok {
		return text
	}
	if text, ok := ksarama.ErrorText(err); ok {
		return text
	}
	return err.Error()
}
