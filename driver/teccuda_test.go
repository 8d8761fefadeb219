package driver

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestExplainTecCUDA: a failure to start tec-cuda at all is said as such.
func TestExplainTecCUDA(t *testing.T) {
	err := explainTecCUDA("/x/tec-cuda", "m", nil, exec.ErrNotFound)
	if err == nil || !strings.Contains(err.Error(), "cannot run /x/tec-cuda: executable file not found") {
		t.Errorf("got %v", err)
	}
}

// TestTecCUDACall: Call runs Exec on the job and gives its failures, and a
// run past Timeout, as device errors that name the model.
func TestTecCUDACall(t *testing.T) {
	tests := []struct {
		name    string
		exec    func(ctx context.Context, runner, dir string) ([]byte, error)
		timeout int // milliseconds
		want    string
	}{
		{"ok", func(context.Context, string, string) ([]byte, error) { return nil, nil }, 0, ""},
		{"not found", func(context.Context, string, string) ([]byte, error) { return nil, exec.ErrNotFound }, 0,
			"cannot run /x/tec-cuda: executable file not found"},
		{"past the timeout", func(ctx context.Context, _, _ string) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, 10, "running model m on the GPU: /x/tec-cuda had not finished after 10ms (--timeout), and was stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &TecCUDA{Path: "/x/tec-cuda", Exec: tt.exec}
			r.Timeout = time.Duration(tt.timeout) * time.Millisecond
			err := r.Call(context.Background(), "m", t.TempDir())
			var de *Error
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Call: %v", err)
			case tt.want != "" && (!errors.As(err, &de) || de.Kind != ErrDevice || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Call: %v, want a device error %q", err, tt.want)
			}
		})
	}
}
