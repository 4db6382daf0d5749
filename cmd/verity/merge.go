package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/verity-kafka/verity/runner"
)

// mergeCommand joins the outputs of a sharded matrix, or suite, into the whole one's tables.
func mergeCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "join the outputs of 'verity matrix --shard K/N' or 'verity suite --shard K/N' into one table",
		ArgsUsage: "DIR...",
		Description: "Each DIR is one shard's --out (its matrix.json, or a suite's suite.json); every shard 1..N of one matrix " +
			"or suite must be given. Writes matrix.json (suite.json), matrix.md (suite.md), matrix.html (suite.html) and " +
			"junit.xml into --out, linking into the shards' run folders, and prints the table; a suite's runs are judged " +
			"again over every shard's (its regressions and positive controls). Exit codes as for matrix (suite): 0 every " +
			"run passed (met its expectation), 1 a guarantee violated (an expectation not met), 2 usage error or a run that " +
			"did not complete, 3 some run unknown.",
		OnUsageError: onUsage,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write the merged tables into `DIR`", Required: true},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() == 0 {
				return &usageError{err: errors.New("merge takes the shards' output directories"), cmd: cmd.FullName()}
			}
			if runner.IsSuite(cmd.Args().First()) {
				return mergeSuite(cmd)
			}
			m, err := runner.MergeMatrix(cmd.Args().Slice(), cmd.String("out"))
			if err != nil {
				return &exitError{code: exitUsage, msg: oneLine(err.Error())}
			}
			w := cmd.Root().Writer
			fmt.Fprint(w, m.Markdown)
			for _, r := range m.Incomplete {
				fmt.Fprintf(w, "\ndid not complete: %s\n", r)
			}
			fmt.Fprintf(w, "\n%d runs from %d shard(s); table: %s, %s, %s\n", len(m.Manifest.Cells), cmd.NArg(), m.MarkdownFile, m.HTMLFile, m.JUnitFile)
			if len(m.Incomplete) > 0 {
				return &exitError{code: exitUsage, msg: fmt.Sprintf("%d of %d runs did not complete (see above)", len(m.Incomplete), len(m.Manifest.Cells))}
			}
			return outcomeExit(m.Worst())
		},
	}
}

// mergeSuite joins the shards of a suite.
func mergeSuite(cmd *cli.Command) error {
	m, err := runner.MergeSuite(cmd.Args().Slice(), cmd.String("out"))
	if err != nil {
		return &exitError{code: exitUsage, msg: oneLine(err.Error())}
	}
	w := cmd.Root().Writer
	fmt.Fprint(w, m.Markdown)
	fmt.Fprintf(w, "\n%d runs from %d shard(s); table: %s, %s, %s\n", len(m.Manifest.Runs), cmd.NArg(), m.MarkdownFile, m.HTMLFile, m.JUnitFile)
	return suiteExit(m.Manifest)
}
