package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
)

func TestWalkThrough_FiveAllowedThenLimited(t *testing.T) {
	var out bytes.Buffer
	if err := walkThrough(context.Background(), &out, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatalf("walk-through: %v\n%s", err, &out)
	}
	got := out.String()
	for _, want := range []string{
		"request 1: 200  X-RateLimit-Remaining: 4\n",
		"request 5: 200  X-RateLimit-Remaining: 0\n",
		"request 6: 429  X-RateLimit-Remaining: 0  Retry-After: ",
		`"status":429`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
