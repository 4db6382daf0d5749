package history

// DecodeLine returns a function that decodes op lines one after another with one decoder, as
// Reader does: with its fast paths (recordFast, opPrefixFast) when fast is set, else with the
// general path alone. It lets the external tests compare the two.
func DecodeLine(fast bool) func(line []byte, op *Op) error {
	d := newDecoder()
	d.stream = fast
	return d.op
}
