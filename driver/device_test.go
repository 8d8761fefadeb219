package driver

import (
	"context"
	"errors"
	"testing"

	"tec/backend/sim"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// softmax is a small program: x f32[4, 8] (256 bytes as an array), three
// computed tensors of which y, the output, is the largest.
const softmax = `model softmax {
  input x: f32[4, 8]
  m[i] = max[j](x[i, j])
  e[i, j] = exp(x[i, j] - m[i])
  s[i] = sum[j](e[i, j])
  y[i, j] = e[i, j] / s[i]
  output y
}
`

func compileSoftmax(t *testing.T, level int) (*te.Program, *Compiled) {
	t.Helper()
	p, err := Check("softmax.te", []byte(softmax), lang.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(p, pipeline.Options{Level: level})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func TestMemory(t *testing.T) {
	p, c := compileSoftmax(t, 0)
	tests := []struct {
		dev   Device
		total int64
		// largest is the name of the largest use.
		largest string
	}{
		// x's 32 elements of 8 bytes, and the peak of the computed
		// tensors: e, s and y while y is computed (m is freed after e).
		{Reference{}, 8 * (32 + 32 + 4 + 32), "x"},
		// x and y, each as an array and as 4-byte f32s on the device.
		{&CUDA{}, 2 * 32 * (8 + 4), "x"},
	}
	for _, tt := range tests {
		m := tt.dev.Memory(p, c)
		if m.Total != tt.total || len(m.Largest) == 0 || m.Largest[0].Name != tt.largest {
			t.Errorf("%s: %+v, want %d bytes, %s the largest", tt.dev.Name(), m, tt.total, tt.largest)
		}
	}
	// The simulator holds the feed, every buffer and the output copied
	// out; race detection adds its access records to every buffer.
	plain := Simulator{}.Memory(p, c)
	race := Simulator{Options: sim.Options{Race: true}}.Memory(p, c)
	est := sim.EstimateMemory(c.Module, sim.Options{})
	if want := 2*32*8 + est.Total(); plain.Total != want {
		t.Errorf("sim: %d bytes, want %d", plain.Total, want)
	}
	if race.Total <= plain.Total || len(race.Largest) > 3 {
		t.Errorf("sim --race: %+v, want more than %d bytes and at most three uses", race, plain.Total)
	}
	for i := 1; i < len(race.Largest); i++ {
		if race.Largest[i].Bytes > race.Largest[i-1].Bytes {
			t.Errorf("sim --race: largest uses %+v out of order", race.Largest)
		}
	}
}

func TestRunHostDevices(t *testing.T) {
	p, c := compileSoftmax(t, pipeline.MaxLevel)
	feeds := map[string]*te.Array{"x": numeric.NewFilled(p.Lookup("x"), numeric.Random, 1)}
	want, err := Reference{}.Run(context.Background(), p, nil, feeds)
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []Device{Simulator{}, Simulator{Options: sim.Options{Race: true}}} {
		got, err := dev.Run(context.Background(), p, c, feeds)
		if err != nil {
			t.Fatalf("%s: %v", dev.Name(), err)
		}
		if mm, err := numeric.Compare(got.Outputs["y"], want.Outputs["y"], numeric.Tolerance{Rtol: 1e-5, Atol: 1e-6}); err != nil || mm != nil {
			t.Errorf("%s: y differs from the reference: %v %v", dev.Name(), mm, err)
		}
	}
}

func TestRunErrors(t *testing.T) {
	p, c := compileSoftmax(t, 0)
	for _, dev := range []Device{Reference{}, Simulator{}} {
		_, err := dev.Run(context.Background(), p, c, map[string]*te.Array{})
		var de *Error
		if !errors.As(err, &de) || de.Kind != ErrEval {
			t.Errorf("%s without feeds: %v, want an evaluation error", dev.Name(), err)
		}
	}
	err := &RaceError{Model: "m", Races: make([]sim.Race, 2), Count: 5}
	if want := "evaluating model m on sim: 5 data races or uninitialised reads (the first 2 shown)"; err.Error() != want {
		t.Errorf("RaceError: %q, want %q", err, want)
	}
}
