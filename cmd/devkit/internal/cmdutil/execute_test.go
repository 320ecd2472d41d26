package cmdutil

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
)

// TestCobraUsageMistakes_ExitTwo: cobra returns a missing required flag as a
// plain error; Main must still exit 2 for it, as for any usage mistake.
func TestCobraUsageMistakes_ExitTwo(t *testing.T) {
	c := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	c.Flags().String("to", "", "")
	_ = c.MarkFlagRequired("to")
	c.SetArgs(nil)
	c.SilenceErrors, c.SilenceUsage = true, true
	err := c.Execute()
	if err == nil || !isCobraUsageMistake(err) {
		t.Fatalf("missing required flag: %v is not taken for a usage mistake", err)
	}
	if isCobraUsageMistake(errors.New("store unreachable")) {
		t.Fatal("a plain error taken for a usage mistake")
	}
}
