package proc

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

func TestSignalGroup_TerminatesTheTree(t *testing.T) {
	cmd := exec.Command("cmd", "/C", "ping -n 300 127.0.0.1 >NUL")
	cmd.SysProcAttr = DetachedAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	info, err := Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Open(info.Identity)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	time.Sleep(200 * time.Millisecond) // let cmd start ping
	children := descendants(cmd.Process.Pid)
	if err := SignalGroup(cmd.Process.Pid, Kill); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Wait(ctx); err != nil {
		t.Fatalf("root still alive: %v", err)
	}
	for _, pid := range children {
		if _, err := Lookup(pid); err == nil {
			t.Errorf("descendant %d survived", pid)
		}
	}
	cmd.Wait()
}
