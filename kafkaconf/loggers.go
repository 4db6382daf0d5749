package kafkaconf

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// LogLevel is a broker logger's level, as log4j names it.
type LogLevel string

// LogLevels are the levels a broker logger may be set to, most verbose first.
func LogLevels() []LogLevel {
	return []LogLevel{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"}
}

// ParseLogLevel reads a level in any case.
func ParseLogLevel(s string) (LogLevel, error) {
	l := LogLevel(strings.ToUpper(strings.TrimSpace(s)))
	if slices.Contains(LogLevels(), l) {
		return l, nil
	}
	var names []string
	for _, l := range LogLevels() {
		names = append(names, string(l))
	}
	return "", fmt.Errorf("log level %q: want one of %s", s, strings.Join(names, ", "))
}

// loggerName is a log4j logger name: a Java class or package name, dotted.
var loggerName = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*$`)

// Loggers are the levels of broker loggers by name ("kafka.server.share": DEBUG), set over the
// image's logging on every node; the others keep theirs (INFO for Kafka's own).
type Loggers map[string]LogLevel

// ParseLoggers reads "LOGGER=LEVEL[,LOGGER=LEVEL...]", as the --broker-log flag takes it.
func ParseLoggers(s string) (Loggers, error) {
	out := Loggers{}
	for item := range strings.SplitSeq(s, ",") {
		name, level, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("broker logger %q: want LOGGER=LEVEL, such as kafka.server.share=DEBUG", item)
		}
		name = strings.TrimSpace(name)
		l, err := ParseLogLevel(level)
		if err != nil {
			return nil, fmt.Errorf("broker logger %s: %w", name, err)
		}
		out[name] = l
	}
	return out, out.Validate()
}

// Validate says what is wrong with the first logger, by name, that is not well formed.
func (ls Loggers) Validate() error {
	for _, name := range slices.Sorted(maps.Keys(ls)) {
		if !loggerName.MatchString(name) {
			return fmt.Errorf("broker logger %q: want a dotted Java package or class name, such as kafka.server.share", name)
		}
		if _, err := ParseLogLevel(string(ls[name])); err != nil {
			return fmt.Errorf("broker logger %s: %w", name, err)
		}
	}
	return nil
}

// String is the loggers as KAFKA_LOG4J_LOGGERS takes them, sorted by name, levels in upper case
// (a scenario file may write them in any): "a=DEBUG,b=TRACE".
func (ls Loggers) String() string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(ls)) {
		out = append(out, name+"="+strings.ToUpper(string(ls[name])))
	}
	return strings.Join(out, ",")
}
