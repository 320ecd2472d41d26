//go:build !unix

package stack_test

import "errors"

func killPID(int) error        { return errors.New("kill -9 is a Unix test") }
func alive(int) bool           { return false }
func processesOf(string) []int { return nil }
