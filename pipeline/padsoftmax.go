package pipeline

import (
	"fmt"

	"tec/te"
	"tec/transform"
)

// padSoftmax pads the axes of p's softmax sites whose scores are halves
// to a multiple of 8 positions (transform.PadSoftmax: rows of 16 bytes,
// so that the weights are staged 16 bytes at a time as an operand of
// their weighted sum) where the cost model predicts the site faster so,
// by rewriteMargin at least: each site priced alone (its subprogram),
// padded and as it is, once for all the sites of the same text. The
// padding adds work (Swin's rows of 49 become 56: the scores, their max
// and their sums over 8/7 as many positions) that the wider loads must
// pay for. It returns the choices it priced, in program order.
func padSoftmax(p *te.Program, opts Options) (*te.Program, []PadChoice, error) {
	opts = opts.withDefaultGPU()
	priced := map[string]PadChoice{} // by the site's canonical text
	var choices []PadChoice
	var firstErr error
	q, _ := transform.PadSoftmax(p, func(s *transform.SoftmaxSite) bool {
		sub := s.Subprogram()
		key := canonicalText(sub)
		c, ok := priced[key]
		if !ok {
			var err error
			if c, err = padChoice(s, sub, opts); err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("padding the softmax of %s: %w", s.Max.Name, err)
				}
				return false
			}
			priced[key] = c
		}
		c.Max = s.Max.Name
		choices = append(choices, c)
		return c.Padded
	})
	if firstErr != nil {
		return nil, nil, firstErr
	}
	return q, choices, nil
}

// padChoice prices the site s alone (sub, its subprogram), padded and as
// it is.
func padChoice(s *transform.SoftmaxSite, sub *te.Program, opts Options) (PadChoice, error) {
	as, _, err := subprogramTime(sub, opts)
	if err != nil {
		return PadChoice{}, err
	}
	padded, sites := transform.PadSoftmax(sub, func(*transform.SoftmaxSite) bool { return true })
	if len(sites) != 1 {
		return PadChoice{}, fmt.Errorf("the site alone is no site to pad")
	}
	t, _, err := subprogramTime(padded, opts)
	if err != nil {
		return PadChoice{}, err
	}
	return PadChoice{Positions: s.Length, To: s.PaddedLength(), Padded: t < as*rewriteMargin, Time: t, AsIs: as}, nil
}

// PadChoice is what the pad pass chose for one softmax site (Max names
// its max): its axis of Positions positions padded to To (Padded) or
// not, with the predictions, in seconds, of the site alone padded (Time)
// and as it is (AsIs).
type PadChoice struct {
	Max           string
	Positions, To int
	Padded        bool
	Time, AsIs    float64
}

// String describes the choice in words, as tec explain --plan prints it.
func (c PadChoice) String() string {
	what := "as it is"
	if c.Padded {
		what = fmt.Sprintf("padded to %d", c.To)
	}
	return fmt.Sprintf("%s over %d positions: %s (predicted alone %.2f µs padded to %d; %.2f µs as it is)",
		c.Max, c.Positions, what, c.Time*1e6, c.To, c.AsIs*1e6)
}
