package ringkernel

import (
	"errors"
	"testing"
)

func TestLifecycleTable(t *testing.T) {
	states := []State{Launched, Active, Idle, Terminating, Terminated, Faulted}
	cmds := []Command{CmdActivate, CmdDeactivate, CmdTerminate, CmdTerminateDrain}
	valid := map[[2]uint32]State{
		{uint32(Launched), uint32(CmdActivate)}:          Active,
		{uint32(Idle), uint32(CmdActivate)}:              Active,
		{uint32(Active), uint32(CmdDeactivate)}:          Idle,
		{uint32(Launched), uint32(CmdTerminate)}:         Terminating,
		{uint32(Active), uint32(CmdTerminate)}:           Terminating,
		{uint32(Idle), uint32(CmdTerminate)}:             Terminating,
		{uint32(Terminating), uint32(CmdTerminate)}:      Terminating,
		{uint32(Launched), uint32(CmdTerminateDrain)}:    Terminating,
		{uint32(Active), uint32(CmdTerminateDrain)}:      Terminating,
		{uint32(Idle), uint32(CmdTerminateDrain)}:        Terminating,
		{uint32(Terminating), uint32(CmdTerminateDrain)}: Terminating,
	}
	for _, s := range states {
		for _, c := range cmds {
			got, err := Next(s, c)
			want, ok := valid[[2]uint32{uint32(s), uint32(c)}]
			switch {
			case ok && (err != nil || got != want):
				t.Errorf("%s on %s: got %s, %v; want %s", c, s, got, err, want)
			case !ok && !errors.Is(err, ErrTransition):
				t.Errorf("%s on %s: got %s, %v; want ErrTransition", c, s, got, err)
			case !ok && got != s:
				t.Errorf("%s on %s: state changed to %s on error", c, s, got)
			}
		}
	}
	if _, err := Next(Active, CmdNone); !errors.Is(err, ErrTransition) {
		t.Errorf("no-op command accepted: %v", err)
	}
}
